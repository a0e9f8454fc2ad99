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
  TW_ASSERT_HOT_MSG((region.lkey - first_key_) % 2 == 0 && region.rkey == region.lkey + 1,
                    "a registration's keys are its index, twice");
  TW_ASSERT_HOT_MSG(find(region.lkey) == nullptr, "every key names one region");
  regions_.insert((region.lkey - first_key_) / 2, region);
  return region;
}

Status MemoryRegistry::remove(const MemoryRegion& region) {
  const MemoryRegion* found = find(region.lkey);
  if (found == nullptr || found->lkey != region.lkey || found->rkey != region.rkey) {
    return {StatusCode::kNotFound,
            "deregister_memory: lkey " + std::to_string(region.lkey) + " is not registered"};
  }
  const bool erased = regions_.erase((region.lkey - first_key_) / 2);
  TW_ASSERT_HOT_MSG(erased, "a registered region is found by its keys");
  return {};
}

Status MemoryRegistry::why_not(const MemoryRegion* region, const char* key_kind, uint32_t key,
                               uint64_t addr, uint64_t length, Access needed) const {
  TW_ASSERT_MSG(!allows(region, addr, length, needed), "only a failed check is explained");
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
  // What is left of allows(): the region lacks the right.
  return {StatusCode::kRemoteAccess, name + " lacks the access right this operation needs"};
}

}  // namespace tensorwire::sim
