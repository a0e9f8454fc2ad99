#include "backend_sim/zeroed_bytes_pool.h"

#include <algorithm>
#include <cstring>

#include "core/assert.h"

namespace tensorwire::sim {

ZeroedBytesPool& ZeroedBytesPool::local() {
  // Per thread: parallel checks run one simulation per thread, and nothing
  // crosses threads (a vector goes back to the pool of the thread it frees on).
  thread_local ZeroedBytesPool pool;
  return pool;
}

ZeroedBytesPool::Bucket* ZeroedBytesPool::bucket_of(uint64_t bytes) {
  for (Bucket& b : buckets_) {
    if (b.bytes == bytes) return &b;
  }
  return nullptr;
}

ZeroedBytes ZeroedBytesPool::take(uint64_t bytes) {
  Bucket* b = bytes >= kMinBytes && bytes <= kMaxBytes ? bucket_of(bytes) : nullptr;
  if (b == nullptr || b->kept.empty()) return ZeroedBytes(bytes);
  ZeroedBytes v = std::move(b->kept.back());
  b->kept.pop_back();
  TW_ASSERT_MSG(v.size() == bytes && pooled_bytes_ >= bytes, "a bucket keeps vectors of its size");
  pooled_bytes_ -= bytes;
  return v;
}

void ZeroedBytesPool::give_back(ZeroedBytes&& v, const DirtyRanges& dirty) {
  const uint64_t bytes = v.size();
  if (bytes < kMinBytes || bytes > kMaxBytes || pooled_bytes_ + bytes > kMaxPooledBytes) return;
  dirty.zero(v.span());
  Bucket* b = bucket_of(bytes);
  if (b == nullptr) {
    buckets_.push_back(Bucket{bytes, {}});
    b = &buckets_.back();
  }
  b->kept.push_back(std::move(v));
  pooled_bytes_ += bytes;
}

}  // namespace tensorwire::sim
