// Hands out request_index values, the 32-bit keys of outstanding
// RdmaTensorRequests that travel as RDMA immediates.
//
// A counter walks [0, max_index] and wraps; indices still outstanding are
// skipped, so an index is never handed out twice while in use (a late write
// for an old request can then never complete a new one). When every index is
// in use, allocate() fails with kNoResource instead of looping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_set>

#include "core/protocols/tf_verbs_zero_copy/rdma_imm_data.h"
#include "core/state_digest.h"
#include "core/status.h"

namespace tensorwire::tf_verbs {

class RequestIndexAllocator {
 public:
  // `max_index` <= kMaxRequestId; smaller values make wrap-around testable.
  explicit RequestIndexAllocator(uint32_t max_index = kMaxRequestId);

  Result<uint32_t> allocate();
  // Releasing an index that is not outstanding is a no-op.
  void release(uint32_t index);
  bool is_outstanding(uint32_t index) const { return outstanding_.count(index) != 0; }
  size_t outstanding() const { return outstanding_.size(); }
  uint32_t max_index() const { return max_index_; }
  void digest(StateDigest& d) const;  // for model checkers' state caches

 private:
  uint32_t max_index_;
  uint32_t next_ = 0;
  // Hashed: an insert and an erase per Recv; the digest walks it in order.
  std::unordered_set<uint32_t> outstanding_;
};

}  // namespace tensorwire::tf_verbs
