#include "backend_sim/memory_registry.h"

#include <string>

#include "core/assert.h"

namespace tensorwire::sim {

MemoryRegion MemoryRegistry::add(const Buffer& buffer, Access access) {
  // SimNic registers only ranges inside a live allocation: no wrap-around.
  TW_ASSERT_HOT_MSG(buffer.addr + buffer.length >= buffer.addr,
                "a region's bounds fit the address space");
  MemoryRegion region;
  region.addr = buffer.addr;
  region.length = buffer.length;
  region.access = access;
  region.kind = buffer.kind;
  region.device = buffer.device;
  region.lkey = next_key_++;
  region.rkey = next_key_++;
  TW_ASSERT_HOT_MSG(next_key_ > region.rkey, "keys are never reused: the counter does not wrap");
  const bool new_lkey = by_lkey_.emplace(region.lkey, region).second;
  const bool new_rkey = lkey_of_rkey_.emplace(region.rkey, region.lkey).second;
  TW_ASSERT_HOT_MSG(new_lkey && new_rkey, "every key names one region");
  TW_ASSERT_HOT(by_lkey_.size() == lkey_of_rkey_.size());
  return region;
}

Status MemoryRegistry::remove(const MemoryRegion& region) {
  auto it = by_lkey_.find(region.lkey);
  if (it == by_lkey_.end() || it->second.rkey != region.rkey) {
    return {StatusCode::kNotFound,
            "deregister_memory: lkey " + std::to_string(region.lkey) + " is not registered"};
  }
  const size_t by_rkey = lkey_of_rkey_.erase(region.rkey);
  TW_ASSERT_HOT_MSG(by_rkey == 1, "a registered region is found by its lkey and by its rkey");
  by_lkey_.erase(it);
  TW_ASSERT_HOT(by_lkey_.size() == lkey_of_rkey_.size());
  return {};
}

Status MemoryRegistry::check(const MemoryRegion* region, const char* key_kind, uint32_t key,
                             uint64_t addr, uint64_t length, Access needed) const {
  // Named only when a check fails: every work request passes here (twice for
  // a write), and building the name costs more than the check.
  if (region != nullptr && region->contains(addr, length) && has_access(region->access, needed)) {
    return {};
  }
  const std::string name = std::string(key_kind) + " " + std::to_string(key);
  if (region == nullptr) {
    return {StatusCode::kNotFound, name + " names no registered region"};
  }
  if (!region->contains(addr, length)) {
    // Appended piece by piece: GCC 12 at -O3 warns (falsely, -Wrestrict) on
    // "literal" + std::to_string(...) chains.
    std::string what = "range [";
    what += std::to_string(addr);
    what += ", +";
    what += std::to_string(length);
    what += ") is outside ";
    what += name;
    what += "'s region of ";
    what += std::to_string(region->length);
    what += " bytes";
    return {StatusCode::kInvalidArgument, what};
  }
  if (!has_access(region->access, needed)) {
    return {StatusCode::kRemoteAccess, name + " lacks the access right this operation needs"};
  }
  return {};
}

Status MemoryRegistry::check_local(uint32_t lkey, uint64_t addr, uint64_t length,
                                   Access needed) const {
  if (length == 0) return {};  // a zero-length sge touches no memory
  auto it = by_lkey_.find(lkey);
  return check(it == by_lkey_.end() ? nullptr : &it->second, "lkey", lkey, addr, length, needed);
}

Status MemoryRegistry::check_remote(uint32_t rkey, uint64_t addr, uint64_t length,
                                    Access needed) const {
  if (length == 0) return {};  // verbs do not validate the rkey of a zero-length access
  auto it = lkey_of_rkey_.find(rkey);
  const MemoryRegion* region = nullptr;
  if (it != lkey_of_rkey_.end()) {
    auto by_lkey = by_lkey_.find(it->second);
    TW_ASSERT_HOT_MSG(by_lkey != by_lkey_.end(), "an rkey names a live region's lkey");
    region = &by_lkey->second;
    TW_ASSERT_HOT(region->rkey == rkey);
  }
  return check(region, "rkey", rkey, addr, length, needed);
}

}  // namespace tensorwire::sim
