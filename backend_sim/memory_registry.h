// One rank's registered memory regions, found by lkey (local work requests)
// or rkey (a peer's RDMA). Keys are deterministic, distinct per rank and never
// reused, so a stale rkey can only fail, never reach a newer region.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "core/memory.h"
#include "core/status.h"

namespace tensorwire::sim {

class MemoryRegistry {
 public:
  explicit MemoryRegistry(uint32_t rank) : next_key_((rank + 1) << 20) {}

  MemoryRegion add(const Buffer& buffer, Access access);
  Status remove(const MemoryRegion& region);

  // Why a local access by lkey fails, or ok.
  Status check_local(uint32_t lkey, uint64_t addr, uint64_t length, Access needed) const;
  // Why a remote access by rkey fails, or ok.
  Status check_remote(uint32_t rkey, uint64_t addr, uint64_t length, Access needed) const;
  size_t live_regions() const { return by_lkey_.size(); }

 private:
  Status check(const MemoryRegion* region, const char* key_kind, uint32_t key, uint64_t addr,
               uint64_t length, Access needed) const;
  uint32_t next_key_;
  // Lookup only; never iterated.
  std::unordered_map<uint32_t, MemoryRegion> by_lkey_;
  std::unordered_map<uint32_t, uint32_t> lkey_of_rkey_;
};

}  // namespace tensorwire::sim
