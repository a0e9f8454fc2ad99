// The IB memory of one memory (host or GPU) on one rank: a pool of bytes that
// IB buffers are carved from, first fit. As in Realm's IBMemory, every IB
// buffer carries a reference count keyed by its offset in the pool
// (block_ref_count_map): one per consumer; the last consumer to finish frees it.
#pragma once

#include <cstdint>
#include <map>

#include "core/status.h"

namespace tensorwire::collectives {

class IBMemory {
 public:
  explicit IBMemory(uint64_t pool_bytes) : pool_bytes_(pool_bytes) {}

  // An offset for `bytes` with `consumers` references, or kOutOfMemory when no
  // free range is large enough. A zero-byte block takes no space but still has
  // an offset and a count, so it is freed like any other.
  Result<uint64_t> do_alloc(uint64_t bytes, uint32_t consumers);
  // Drops one reference of the block at `offset`; true when that was the last
  // and the block is now free. An offset with no live block is an error (a
  // double free), never undefined behaviour.
  Result<bool> do_free(uint64_t offset);

  uint64_t pool_bytes() const { return pool_bytes_; }
  uint64_t bytes_in_use() const { return in_use_; }
  uint64_t peak_bytes_in_use() const { return peak_; }
  size_t live_blocks() const { return blocks_.size(); }
  // References left on the block at `offset` (0 when there is none).
  uint32_t ref_count(uint64_t offset) const;

 private:
  struct Block {
    uint64_t bytes = 0;
    uint32_t ref_count = 0;
  };
  uint64_t pool_bytes_;
  uint64_t in_use_ = 0;
  uint64_t peak_ = 0;
  uint64_t next_zero_offset_ = 0;  // zero-byte blocks get distinct offsets past the pool
  std::map<uint64_t, Block> blocks_;  // block_ref_count_map, ordered by offset
};

}  // namespace tensorwire::collectives
