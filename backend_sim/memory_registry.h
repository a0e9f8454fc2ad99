// One rank's registered memory regions, found by lkey (local work requests)
// or rkey (a peer's RDMA). Keys are deterministic, distinct per rank and never
// reused, so a stale rkey can only fail, never reach a newer region.
#pragma once

#include <cstdint>

#include "backend_sim/dense_id_map.h"
#include "core/memory.h"
#include "core/status.h"

namespace tensorwire::sim {

class MemoryRegistry {
 public:
  explicit MemoryRegistry(uint32_t rank) : first_key_((rank + 1) << 20), next_key_(first_key_) {}

  MemoryRegion add(const Buffer& buffer, Access access);
  Status remove(const MemoryRegion& region);

  // Why a local access by lkey fails, or ok. Inline, with the reasons out of
  // line: every work request passes here (twice for a write).
  Status check_local(uint32_t lkey, uint64_t addr, uint64_t length, Access needed) const {
    if (length == 0) return {};  // a zero-length sge touches no memory
    const MemoryRegion* region = find(lkey);
    if (region != nullptr && region->lkey != lkey) region = nullptr;  // an rkey given as an lkey
    if (allows(region, addr, length, needed)) return {};
    return why_not(region, "lkey", lkey, addr, length, needed);
  }
  // Why a remote access by rkey fails, or ok.
  Status check_remote(uint32_t rkey, uint64_t addr, uint64_t length, Access needed) const {
    if (length == 0) return {};  // verbs do not validate the rkey of a zero-length access
    const MemoryRegion* region = find(rkey);
    if (region != nullptr && region->rkey != rkey) region = nullptr;  // an lkey given as an rkey
    if (allows(region, addr, length, needed)) return {};
    return why_not(region, "rkey", rkey, addr, length, needed);
  }
  size_t live_regions() const { return regions_.size(); }

 private:
  static bool allows(const MemoryRegion* region, uint64_t addr, uint64_t length, Access needed) {
    return region != nullptr && region->contains(addr, length) && has_access(region->access, needed);
  }
  // The failed check's reason, named (built only for a failure).
  [[gnu::cold, gnu::noinline]] Status why_not(const MemoryRegion* region, const char* key_kind,
                                              uint32_t key, uint64_t addr, uint64_t length,
                                              Access needed) const;
  // Registration i has lkey first_key_ + 2i and rkey first_key_ + 2i + 1:
  // both keys find it in one table, by i (a remote access used to look the
  // rkey up, then the lkey).
  const MemoryRegion* find(uint32_t key) const {
    if (key < first_key_) return nullptr;
    return regions_.find((key - first_key_) / 2);
  }
  uint32_t first_key_;
  uint32_t next_key_;
  // By registration index, in chunks of 16: a chunk is zeroed when it is
  // made, and a model checker's execution registers a handful of regions
  // per rank (a chunk of 256 was 14 KiB zeroed per rank per execution).
  DenseIdMap<MemoryRegion, 4> regions_;
};

}  // namespace tensorwire::sim
