// Zero-filled byte vectors kept for reuse by one thread's simulated memories.
// A model checker runs thousands of simulations a second, each allocating the
// same control rings and message buffers (tens of KiB per rank) and writing a
// few hundred bytes of them: zeroing the whole of each fresh allocation was a
// twentieth of an execution. A vector given back is zeroed again over the
// range its owner may have written, so what `take` hands out is exactly what
// a fresh zeroed vector would be.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "backend_sim/dirty_ranges.h"
#include "backend_sim/zeroed_bytes.h"

namespace tensorwire::sim {

class ZeroedBytesPool {
 public:
  // Allocations smaller than this are cheaper to zero than to keep.
  static constexpr uint64_t kMinBytes = 4096;
  // Larger ones are tensors of plain runs: zeroing one at its free would be
  // paid whether or not another of its size ever comes.
  static constexpr uint64_t kMaxBytes = 1ull << 20;
  // The most one thread keeps: a few executions' worth of rings and buffers.
  static constexpr uint64_t kMaxPooledBytes = 64ull << 20;

  // The calling thread's pool.
  static ZeroedBytesPool& local();

  // `bytes` zero bytes: a kept vector of that size when there is one.
  ZeroedBytes take(uint64_t bytes);
  // Keeps `v` (all zero outside `dirty`, which is zeroed now) for a later
  // take, unless its size is outside [kMinBytes, kMaxBytes] or the pool is full.
  void give_back(ZeroedBytes&& v, const DirtyRanges& dirty);
  // The same with one range, [dirty_begin, dirty_end).
  void give_back(ZeroedBytes&& v, uint64_t dirty_begin, uint64_t dirty_end) {
    DirtyRanges dirty;
    dirty.add(dirty_begin, std::max(dirty_begin, dirty_end));
    give_back(std::move(v), dirty);
  }

  uint64_t pooled_bytes() const { return pooled_bytes_; }

 private:
  struct Bucket {
    uint64_t bytes = 0;
    std::vector<ZeroedBytes> kept;
  };
  Bucket* bucket_of(uint64_t bytes);

  std::vector<Bucket> buckets_;  // few sizes: searched in order
  uint64_t pooled_bytes_ = 0;
};

}  // namespace tensorwire::sim
