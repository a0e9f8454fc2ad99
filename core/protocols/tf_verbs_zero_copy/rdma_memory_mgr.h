// RdmaMemoryMgr: the meta-data cache and the registered memory of one rank.
//
// - Meta-data cache: the last RdmaTensorMetaData seen per (source rank, tensor
//   name); a receiver pre-allocates result tensors from it.
// - Region table: every region this rank registered, by start address.
//   find_region(addr, len) answers the one region that covers the whole range,
//   never a partial match.
// - Registered buffer pool: result tensors, host proxies, proto buffers,
//   clones and staging buffers are allocated and registered once and reused
//   (same kind, device, rights and size class), because registration is
//   expensive (pinning) and steady-state steps should make none.
// - Source tensors handed to Send are registered on first use with local
//   rights only (a write source needs no remote rights) and the registration is
//   cached: the next step's Send of the same buffer costs nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/memory.h"
#include "core/state_digest.h"
#include "core/nic.h"
#include "core/protocols/tf_verbs_zero_copy/hashed_tables.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_tensor_meta_data.h"
#include "core/status.h"

namespace tensorwire::tf_verbs {

// A pool buffer: `buffer` is what callers see (length = the bytes asked for);
// `region` covers it (nullopt for unregistered device memory).
struct RegisteredBuffer {
  Buffer buffer;
  std::optional<MemoryRegion> region;
};

// For model checkers' state caches.
void digest_buffer(StateDigest& d, const Buffer& b);
void digest_buffer(StateDigest& d, const std::optional<RegisteredBuffer>& b);

class RdmaMemoryMgr {
 public:
  // At most this many free buffers are kept per pool class; more are freed.
  static constexpr size_t kMaxFreePerClass = 16;

  RdmaMemoryMgr(Nic& nic, MemorySpace& memory);
  // Deregisters every region it made and frees every buffer it allocated.
  ~RdmaMemoryMgr();
  RdmaMemoryMgr(const RdmaMemoryMgr&) = delete;
  RdmaMemoryMgr& operator=(const RdmaMemoryMgr&) = delete;

  // --- meta-data cache, keyed by (source rank, tensor name) ---
  std::optional<RdmaTensorMetaData> get_tensor_meta_data(RankId src, std::string_view name) const;
  void set_tensor_meta_data(RankId src, std::string_view name, const RdmaTensorMetaData& meta);
  void erase_tensor_meta_data(RankId src, std::string_view name);
  size_t meta_data_cache_size() const { return meta_data_.size(); }
  // The cache, the regions, the pool: for model checkers' state caches. Kept
  // between digests until a method that changes them runs: a dfs digests at
  // every choice point it expands, and most events change none of them.
  void digest(StateDigest& d) const;

  // --- regions ---
  // The registered region covering all of [addr, addr + length), if any.
  std::optional<MemoryRegion> find_region(uint64_t addr, uint64_t length) const;
  // A region covering a Send's source buffer: found, or registered now with
  // kLocalWrite only (local read is implied) and remembered.
  Result<MemoryRegion> register_source(const Buffer& buffer);
  // Deregisters the source region register_source made for `buffer`, if
  // any. Only a planted bug calls it (PlantedBug::kDeregisterSourceEarly).
  void forget_source(const Buffer& buffer);
  // PlantedBug::kPoolOverlap: a registered buffer still in use is handed out
  // again, so two live buffers overlap.
  void plant_overlapping_hand_out(bool on) { overlapping_hand_out_ = on; }

  // --- registered buffer pool ---
  // A buffer of `bytes` in (kind, device) registered with exactly `access`,
  // reused from the pool when one of the same class is free.
  Result<RegisteredBuffer> allocate_registered(MemoryKind kind, uint32_t device, uint64_t bytes,
                                               Access access);
  // Pooled device memory the NIC cannot reach (kDeviceNoGpuDirect results):
  // allocated, never registered.
  Result<Buffer> allocate_unregistered(MemoryKind kind, uint32_t device, uint64_t bytes);
  // Back to the pool. Unknown buffers (not from this pool) are ignored: false.
  bool release_registered(const Buffer& buffer);
  // Deregister (invalidating the rkey) and free instead of pooling: for
  // buffers a peer might still write into after a channel was closed.
  bool discard(const Buffer& buffer);
  bool owns(const Buffer& buffer) const { return allocations_.count(buffer.addr) != 0; }

  uint64_t registrations() const { return registrations_; }
  // Feature coverage: pool buffers handed out again from a free list, and
  // pool buffers handed out longer than asked for (a size off its class).
  uint64_t pool_reuses() const { return pool_reuses_; }
  uint64_t sizes_off_class() const { return sizes_off_class_; }
  size_t free_buffers() const;
  size_t buffers_in_use() const;
  // The pool class (bytes actually allocated) for a request of `bytes`.
  static uint64_t size_class(uint64_t bytes);

 private:
  enum class RegionOwner : uint8_t { kPool, kSource };
  struct RegionEntry {
    MemoryRegion region;
    RegionOwner owner;
  };
  struct PoolKey {
    MemoryKind kind;
    uint32_t device;
    uint32_t access;
    bool registered;
    uint64_t bytes;
    auto tie() const { return std::tie(kind, device, access, registered, bytes); }
    bool operator<(const PoolKey& o) const { return tie() < o.tie(); }
    bool operator==(const PoolKey& o) const { return tie() == o.tie(); }
  };
  struct PoolKeyHash {
    size_t operator()(const PoolKey& k) const {
      const uint64_t kind_device_access = (uint64_t{static_cast<uint8_t>(k.kind)} << 56) ^
                                          (uint64_t{k.device} << 24) ^ (uint64_t{k.access} << 1) ^
                                          (k.registered ? 1 : 0);
      return hash_combine(std::hash<uint64_t>{}(k.bytes), kind_device_access);
    }
  };
  struct Allocation {
    Buffer whole;  // as allocated (size-class length)
    std::optional<MemoryRegion> region;
    PoolKey key;
    bool in_use = false;
  };

  Result<RegisteredBuffer> allocate_pooled(const PoolKey& key, uint64_t bytes);
  void destroy_allocation(uint64_t addr);
  Result<MemoryRegion> register_region(const Buffer& buffer, Access access, RegionOwner owner);
  void deregister_region(uint64_t start);

  Nic& nic_;
  MemorySpace& memory_;
  // Hashed, searched by a string_view of the name: a lookup at every request
  // and response makes no string and compares no names on the way. Walked in
  // (rank, name) order (sorted_entries) by the digest.
  using MetaKey = std::pair<RankId, std::string>;
  using MetaView = std::pair<RankId, std::string_view>;
  std::unordered_map<MetaKey, RdmaTensorMetaData, NamedKeyHash<MetaKey, MetaView>,
                     NamedKeyEqual<MetaKey, MetaView>>
      meta_data_;
  std::map<uint64_t, RegionEntry> regions_;        // by start address, non-overlapping
  // Pool buffers by address: hashed (looked up at every release), walked in
  // address order (sorted_keys) wherever the order shows.
  std::unordered_map<uint64_t, Allocation> allocations_;
  // Free pool buffers by class: hashed, walked in class order by the digest.
  std::unordered_map<PoolKey, std::vector<uint64_t>, PoolKeyHash> free_;
  uint64_t registrations_ = 0;
  uint64_t pool_reuses_ = 0;
  uint64_t sizes_off_class_ = 0;
  bool overlapping_hand_out_ = false;
  // digest()'s value while nothing changed (every method that changes the
  // maps above invalidates it first).
  void digest_afresh(StateDigest& d) const;
  void changed() { digest_.invalidate(); }
  CachedStateDigest digest_;
};

}  // namespace tensorwire::tf_verbs
