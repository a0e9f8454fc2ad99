// Registered host memory a rendezvous stages blocks in. VbufPool: MVAPICH2's
// vbufs for one peer and one direction, `count` buffers of `vbuf_bytes` in
// one allocation with one registration (so a CTS names many under one rkey),
// made on first use and kept. StagingCache: the naive baseline's
// whole-message host buffers, each registered once and kept for reuse (as an
// application reuses its host buffer and MVAPICH2 its registration cache),
// so the baseline pays no registration per message either.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/memory.h"
#include "core/rank_env.h"
#include "core/status.h"

namespace tensorwire::mvapich2 {

class VbufPool {
 public:
  VbufPool(RankEnv env, Access access, uint64_t vbuf_bytes, uint32_t count);
  ~VbufPool();
  VbufPool(const VbufPool&) = delete;
  VbufPool& operator=(const VbufPool&) = delete;

  // Allocates and registers the pool the first time; ok after that.
  Status ensure();
  // The lowest free vbuf, or nullopt when every one is in use.
  std::optional<uint32_t> take();
  void give_back(uint32_t index);

  Buffer vbuf(uint32_t index) const;
  const MemoryRegion& region() const { return region_; }
  uint64_t vbuf_bytes() const { return vbuf_bytes_; }
  uint32_t free_count() const { return static_cast<uint32_t>(free_.size()); }
  bool in_use(uint32_t index) const;

 private:
  RankEnv env_;
  Access access_;
  uint64_t vbuf_bytes_;
  uint32_t count_;
  Buffer pool_;
  MemoryRegion region_;
  std::vector<uint32_t> free_;  // sorted, highest first: take() pops the lowest
  std::vector<bool> busy_;
};

class StagingCache {
 public:
  StagingCache(RankEnv env, Access access);
  ~StagingCache();
  StagingCache(const StagingCache&) = delete;
  StagingCache& operator=(const StagingCache&) = delete;

  // A free registered buffer of at least `bytes` (a new one when none is),
  // by id.
  Result<uint32_t> take(uint64_t bytes);
  void give_back(uint32_t id);
  const Buffer& buffer(uint32_t id) const { return entries_.at(id).buffer; }
  const MemoryRegion& region(uint32_t id) const { return entries_.at(id).region; }
  size_t in_use() const;

 private:
  struct Entry {
    Buffer buffer;
    MemoryRegion region;
    bool busy = false;
  };
  RankEnv env_;
  Access access_;
  std::vector<Entry> entries_;
};

}  // namespace tensorwire::mvapich2
