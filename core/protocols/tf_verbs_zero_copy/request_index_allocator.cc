#include "core/protocols/tf_verbs_zero_copy/request_index_allocator.h"

#include <string>

#include "core/assert.h"
#include "core/protocols/tf_verbs_zero_copy/hashed_tables.h"

namespace tensorwire::tf_verbs {

RequestIndexAllocator::RequestIndexAllocator(uint32_t max_index)
    : max_index_(max_index > kMaxRequestId ? static_cast<uint32_t>(kMaxRequestId) : max_index) {}

Result<uint32_t> RequestIndexAllocator::allocate() {
  uint64_t capacity = uint64_t{max_index_} + 1;
  if (outstanding_.size() >= capacity) {
    return Status(StatusCode::kNoResource,
                  "all " + std::to_string(capacity) + " request indices are outstanding");
  }
  // At most outstanding_.size() + 1 probes: each skipped index is outstanding.
  for (;;) {
    uint32_t candidate = next_;
    next_ = candidate == max_index_ ? 0 : candidate + 1;
    if (outstanding_.insert(candidate).second) {
      TW_ASSERT_MSG(candidate <= max_index_ && !is_reserved_imm(candidate),
                    "an index an immediate can carry without meaning anything else");
      return candidate;
    }
  }
}

void RequestIndexAllocator::release(uint32_t index) { outstanding_.erase(index); }

void RequestIndexAllocator::digest(StateDigest& d) const {
  d.add(next_).add(outstanding_.size());
  for (uint32_t i : sorted_keys(outstanding_)) d.add(i);
}

}  // namespace tensorwire::tf_verbs
