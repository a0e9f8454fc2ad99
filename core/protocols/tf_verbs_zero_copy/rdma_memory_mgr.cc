#include "core/protocols/tf_verbs_zero_copy/rdma_memory_mgr.h"

#include <bit>
#include <iterator>

#include "core/assert.h"

namespace tensorwire::tf_verbs {

RdmaMemoryMgr::RdmaMemoryMgr(Nic& nic, MemorySpace& memory) : nic_(nic), memory_(memory) {}

RdmaMemoryMgr::~RdmaMemoryMgr() {
  // In address order, as the ordered map this table was freed in. The tables
  // go with this object, so nothing is erased from them on the way (the
  // erasures were a fifth of this destructor's instructions in a model
  // checker's execution). Every pool region is its allocation's; the source
  // regions are the rest.
  for (uint64_t addr : sorted_keys(allocations_)) {
    const Allocation& a = allocations_.find(addr)->second;
    if (a.region) (void)nic_.deregister_memory(*a.region);
    memory_.free(a.whole);
  }
  for (const auto& [start, entry] : regions_) {
    if (entry.owner == RegionOwner::kSource) (void)nic_.deregister_memory(entry.region);
  }
}

std::optional<RdmaTensorMetaData> RdmaMemoryMgr::get_tensor_meta_data(RankId src,
                                                                      std::string_view name) const {
  auto it = meta_data_.find(MetaView{src, name});
  if (it == meta_data_.end()) return std::nullopt;
  return it->second;
}

void RdmaMemoryMgr::set_tensor_meta_data(RankId src, std::string_view name,
                                         const RdmaTensorMetaData& meta) {
  changed();
  if (auto it = meta_data_.find(MetaView{src, name}); it != meta_data_.end()) {
    it->second = meta;
    return;
  }
  meta_data_.emplace(MetaKey{src, std::string(name)}, meta);
}

void RdmaMemoryMgr::erase_tensor_meta_data(RankId src, std::string_view name) {
  changed();
  if (auto it = meta_data_.find(MetaView{src, name}); it != meta_data_.end()) meta_data_.erase(it);
}

std::optional<MemoryRegion> RdmaMemoryMgr::find_region(uint64_t addr, uint64_t length) const {
  // Regions never overlap, so only the last region starting at or before addr
  // can cover the range.
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) return std::nullopt;
  --it;
  if (!it->second.region.contains(addr, length)) return std::nullopt;
  TW_ASSERT(it->first == it->second.region.addr);
  return it->second.region;
}

Result<MemoryRegion> RdmaMemoryMgr::register_source(const Buffer& buffer) {
  changed();
  if (auto found = find_region(buffer.addr, buffer.length)) return *found;
  if (!is_nic_reachable(buffer.kind)) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("cannot register ") + memory_kind_name(buffer.kind) + " memory");
  }
  // A cached source registration that overlaps the new buffer without covering
  // it belongs to memory that was freed and reused: drop it. Overlapping a pool
  // buffer partially is a caller error.
  uint64_t end = buffer.addr + buffer.length;
  auto it = regions_.upper_bound(buffer.addr);
  if (it != regions_.begin()) --it;
  std::vector<uint64_t> stale;
  for (; it != regions_.end() && it->first < std::max(end, buffer.addr + 1); ++it) {
    const MemoryRegion& r = it->second.region;
    bool overlaps = r.addr < std::max(end, buffer.addr + 1) && buffer.addr < r.addr + r.length;
    if (!overlaps) continue;
    if (it->second.owner != RegionOwner::kSource) {
      return Status(StatusCode::kInvalidArgument,
                    "source buffer partially overlaps a registered pool buffer");
    }
    stale.push_back(it->first);
  }
  for (uint64_t start : stale) deregister_region(start);
  // The NIC only reads a source: no rights beyond the implicit local read.
  return register_region(buffer, Access::kNone, RegionOwner::kSource);
}

uint64_t RdmaMemoryMgr::size_class(uint64_t bytes) {
  constexpr uint64_t kMin = 64;
  if (bytes <= kMin) return kMin;
  // Steps of a quarter of the power of two below: at most 25% waste.
  uint64_t step = std::max(kMin, std::bit_floor(bytes) / 4);
  if (bytes > UINT64_MAX - step) return bytes;
  const uint64_t rounded = (bytes + step - 1) / step * step;
  TW_ASSERT_MSG(rounded >= bytes && rounded - bytes < step,
                "a size class holds the request and wastes less than a step");
  return rounded;
}

Result<RegisteredBuffer> RdmaMemoryMgr::allocate_registered(MemoryKind kind, uint32_t device,
                                                            uint64_t bytes, Access access) {
  if (!is_nic_reachable(kind)) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("cannot register ") + memory_kind_name(kind) + " memory");
  }
  PoolKey key{kind, device, static_cast<uint32_t>(access), true, size_class(bytes)};
  return allocate_pooled(key, bytes);
}

Result<Buffer> RdmaMemoryMgr::allocate_unregistered(MemoryKind kind, uint32_t device,
                                                    uint64_t bytes) {
  PoolKey key{kind, device, 0, false, size_class(bytes)};
  auto r = allocate_pooled(key, bytes);
  if (!r.is_ok()) return r.status();
  return r->buffer;
}

Result<RegisteredBuffer> RdmaMemoryMgr::allocate_pooled(const PoolKey& key, uint64_t bytes) {
  changed();
  TW_ASSERT_MSG(key.bytes >= bytes, "a pool buffer holds what was asked for");
  if (key.bytes != bytes) ++sizes_off_class_;
  auto view = [bytes](const Allocation& a) {
    Buffer b = a.whole;
    b.length = bytes;
    return RegisteredBuffer{b, a.region};
  };
  if (overlapping_hand_out_ && key.registered) {
    // The planted mistake: the first buffer of this class still in use, as
    // if it were free.
    for (uint64_t addr : sorted_keys(allocations_)) {
      const Allocation& a = allocations_.at(addr);
      if (a.in_use && a.key.tie() == key.tie()) return view(a);
    }
  }
  auto free_it = free_.find(key);
  if (free_it != free_.end() && !free_it->second.empty()) {
    uint64_t addr = free_it->second.back();
    free_it->second.pop_back();
    Allocation& a = allocations_.at(addr);
    TW_ASSERT_MSG(!a.in_use && a.key.bytes == key.bytes,
                  "a free list holds free buffers of its class");
    a.in_use = true;
    ++pool_reuses_;
    return view(a);
  }
  Result<Buffer> whole = memory_.allocate(key.kind, key.device, key.bytes);
  if (!whole.is_ok()) return whole.status();
  Allocation a{*whole, std::nullopt, key, true};
  if (key.registered) {
    auto region = register_region(*whole, static_cast<Access>(key.access), RegionOwner::kPool);
    if (!region.is_ok()) {
      memory_.free(*whole);
      return region.status();
    }
    a.region = *region;
  }
  // MemorySpace::allocate gives every live allocation its own address, and
  // every pool buffer is live until destroy_allocation frees it.
  auto [it, inserted] = allocations_.emplace(whole->addr, a);
  TW_ASSERT_MSG(inserted, "an allocator returned an address already in the pool");
  return view(it->second);
}

bool RdmaMemoryMgr::release_registered(const Buffer& buffer) {
  changed();
  auto it = allocations_.find(buffer.addr);
  if (it == allocations_.end() || !it->second.in_use) return false;
  auto& list = free_[it->second.key];
  if (list.size() >= kMaxFreePerClass) {
    destroy_allocation(buffer.addr);
    return true;
  }
  it->second.in_use = false;
  list.push_back(buffer.addr);
  TW_ASSERT(list.size() <= kMaxFreePerClass);
  return true;
}

bool RdmaMemoryMgr::discard(const Buffer& buffer) {
  changed();
  auto it = allocations_.find(buffer.addr);
  if (it == allocations_.end() || !it->second.in_use) return false;
  destroy_allocation(buffer.addr);
  return true;
}

void RdmaMemoryMgr::destroy_allocation(uint64_t addr) {
  changed();
  auto it = allocations_.find(addr);
  if (it == allocations_.end()) return;
  Allocation a = it->second;
  allocations_.erase(it);
  if (!a.in_use) {
    auto& list = free_[a.key];
    std::erase(list, addr);
  }
  if (a.region) deregister_region(a.region->addr);
  memory_.free(a.whole);
}

size_t RdmaMemoryMgr::free_buffers() const {
  size_t n = 0;
  for (const auto& [key, list] : free_) n += list.size();
  return n;
}

size_t RdmaMemoryMgr::buffers_in_use() const {
  const size_t free = free_buffers();
  TW_ASSERT_MSG(free <= allocations_.size(), "a free buffer is one of the pool's");
  return allocations_.size() - free;
}

Result<MemoryRegion> RdmaMemoryMgr::register_region(const Buffer& buffer, Access access,
                                                   RegionOwner owner) {
  changed();
  Result<MemoryRegion> region = nic_.register_memory(buffer, access);
  if (!region.is_ok()) return region.status();
  auto [it, inserted] = regions_.try_emplace(region->addr, RegionEntry{*region, owner});
  if (!inserted) {
    // Two regions starting at one address: keeping both in the map would lose
    // one registration for good, so refuse the new one. Reachable without a
    // bug of ours: over verbs a freed source tensor's cached registration can
    // still start where the allocator now hands out a pool buffer, and a
    // zero-length source region overlaps nothing register_source would drop.
    // So an error value (kInternal), not an assertion.
    Status st = nic_.deregister_memory(*region);
    (void)st;
    return Status(StatusCode::kInternal, "a registered region already starts at address " +
                                             std::to_string(region->addr));
  }
  ++registrations_;
  return region;
}

void RdmaMemoryMgr::forget_source(const Buffer& buffer) {
  changed();
  auto it = regions_.find(buffer.addr);
  if (it == regions_.end() || it->second.owner != RegionOwner::kSource) return;
  deregister_region(buffer.addr);
}

void RdmaMemoryMgr::deregister_region(uint64_t start) {
  changed();
  auto it = regions_.find(start);
  if (it == regions_.end()) return;
  Status st = nic_.deregister_memory(it->second.region);
  (void)st;  // nothing to do about a failed deregistration but forget it
  regions_.erase(it);
}


void digest_buffer(StateDigest& d, const Buffer& b) {
  d.add(b.addr).add(b.length).add(static_cast<uint64_t>(b.kind)).add(b.device);
}

void digest_buffer(StateDigest& d, const std::optional<RegisteredBuffer>& b) {
  d.add(b.has_value() ? 1 : 0);
  if (!b) return;
  digest_buffer(d, b->buffer);
  d.add(b->region ? b->region->rkey : 0);
}

void RdmaMemoryMgr::digest(StateDigest& d) const {
  d.add(digest_.value([this](StateDigest& own) { digest_afresh(own); }));
}

void RdmaMemoryMgr::digest_afresh(StateDigest& d) const {
  d.add(meta_data_.size());
  for (const auto* entry : sorted_entries(meta_data_)) {
    d.add(entry->first.first).add(entry->first.second);
    entry->second.digest(d);
  }
  d.add(regions_.size());
  for (const auto& [addr, entry] : regions_) {
    d.add(addr).add(entry.region.length).add(entry.region.rkey).add(static_cast<uint64_t>(entry.owner));
  }
  d.add(allocations_.size());
  for (const auto* entry : sorted_entries(allocations_)) {
    const auto& [addr, a] = *entry;
    d.add(addr).add(a.whole.length).add(a.in_use ? 1 : 0).add(a.region ? a.region->rkey : 0);
  }
  d.add(free_.size());
  for (const auto* entry : sorted_entries(free_)) {
    const auto& [key, addrs] = *entry;
    d.add(key.bytes).add(addrs.size());
    for (uint64_t addr : addrs) d.add(addr);
  }
}

}  // namespace tensorwire::tf_verbs
