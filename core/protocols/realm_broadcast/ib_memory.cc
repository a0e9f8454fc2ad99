#include "core/protocols/realm_broadcast/ib_memory.h"

#include <algorithm>
#include <string>

#include "core/assert.h"

namespace tensorwire::collectives {

Result<uint64_t> IBMemory::do_alloc(uint64_t bytes, uint32_t consumers) {
  if (consumers == 0) {
    return Status(StatusCode::kInvalidArgument, "an IB buffer needs at least one consumer");
  }
  if (bytes == 0) {
    // Keyed past any real block so it never collides with one.
    const uint64_t offset = pool_bytes_ + next_zero_offset_++;
    blocks_[offset] = {0, consumers};
    return offset;
  }
  uint64_t candidate = 0;
  for (const auto& [offset, block] : blocks_) {
    if (offset >= pool_bytes_) break;  // the zero-byte keys
    if (offset >= candidate && offset - candidate >= bytes) break;
    candidate = std::max(candidate, offset + block.bytes);
  }
  if (candidate > pool_bytes_ || pool_bytes_ - candidate < bytes) {
    return Status(StatusCode::kOutOfMemory,
                  "IB pool of " + std::to_string(pool_bytes_) + " bytes has no free range of " +
                      std::to_string(bytes) + " bytes (" + std::to_string(in_use_) + " in use)");
  }
  TW_ASSERT_MSG(candidate + bytes <= pool_bytes_, "a block lies inside the pool");
  blocks_[candidate] = {bytes, consumers};
  in_use_ += bytes;
  TW_ASSERT_MSG(in_use_ <= pool_bytes_, "blocks never overlap, so their sum fits the pool");
  peak_ = std::max(peak_, in_use_);
  return candidate;
}

Result<bool> IBMemory::do_free(uint64_t offset) {
  auto it = blocks_.find(offset);
  if (it == blocks_.end()) {
    return Status(StatusCode::kNotFound,
                  "IB block at offset " + std::to_string(offset) + " is not allocated (double free?)");
  }
  TW_ASSERT_MSG(it->second.ref_count > 0, "a block is erased with its last reference");
  if (--it->second.ref_count > 0) return false;
  TW_ASSERT(in_use_ >= it->second.bytes);
  in_use_ -= it->second.bytes;
  blocks_.erase(it);
  return true;
}

uint32_t IBMemory::ref_count(uint64_t offset) const {
  auto it = blocks_.find(offset);
  return it == blocks_.end() ? 0 : it->second.ref_count;
}

}  // namespace tensorwire::collectives
