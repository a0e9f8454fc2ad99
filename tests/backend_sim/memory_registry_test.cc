// The memory registry finds a region by its lkey for local accesses and by
// its rkey for remote ones, in one table: an lkey given as an rkey (or the
// reverse), a key below the rank's range, another rank's key and a removed
// region's keys all name no region, and removing needs both keys.
#include "backend_sim/memory_registry.h"

#include <gtest/gtest.h>

namespace tensorwire::sim::testing {
namespace {

Buffer host_buffer(uint64_t addr, uint64_t length) {
  Buffer b;
  b.addr = addr;
  b.length = length;
  b.kind = MemoryKind::kHostPinned;
  return b;
}

constexpr Access kAll = Access::kLocalWrite | Access::kRemoteWrite | Access::kRemoteRead;

TEST(MemoryRegistry, EachKeyWorksOnlyForItsOwnSide) {
  MemoryRegistry registry(/*rank=*/1);
  const MemoryRegion a = registry.add(host_buffer(0x1000, 4096), kAll);
  const MemoryRegion b = registry.add(host_buffer(0x9000, 4096), kAll);
  EXPECT_TRUE(registry.check_local(a.lkey, 0x1000, 64, Access::kLocalWrite).is_ok());
  EXPECT_TRUE(registry.check_remote(a.rkey, 0x1000, 64, Access::kRemoteWrite).is_ok());
  EXPECT_TRUE(registry.check_remote(b.rkey, 0x9000, 4096, Access::kRemoteRead).is_ok());
  EXPECT_EQ(registry.check_local(a.rkey, 0x1000, 64, Access::kNone).code(), StatusCode::kNotFound);
  EXPECT_EQ(registry.check_remote(a.lkey, 0x1000, 64, Access::kNone).code(), StatusCode::kNotFound);
  // b's keys never reach a's region: the range check names the mismatch.
  EXPECT_EQ(registry.check_remote(b.rkey, 0x1000, 64, Access::kNone).code(), StatusCode::kInvalidArgument);
}

TEST(MemoryRegistry, KeysOutsideTheRankOrRemovedNameNoRegion) {
  MemoryRegistry rank0(/*rank=*/0);
  MemoryRegistry rank1(/*rank=*/1);
  const MemoryRegion mine = rank1.add(host_buffer(0x1000, 4096), kAll);
  const MemoryRegion theirs = rank0.add(host_buffer(0x1000, 4096), kAll);
  EXPECT_EQ(rank1.check_local(theirs.lkey, 0x1000, 64, Access::kNone).code(), StatusCode::kNotFound);
  EXPECT_EQ(rank1.check_remote(theirs.rkey, 0x1000, 64, Access::kNone).code(), StatusCode::kNotFound);
  EXPECT_EQ(rank1.check_local(0, 0x1000, 64, Access::kNone).code(), StatusCode::kNotFound);
  EXPECT_EQ(rank1.check_remote(0xffffffffu, 0x1000, 64, Access::kNone).code(), StatusCode::kNotFound);
  // Removing needs the region's own pair of keys.
  MemoryRegion swapped = mine;
  swapped.lkey = mine.rkey;
  swapped.rkey = mine.lkey;
  EXPECT_EQ(rank1.remove(swapped).code(), StatusCode::kNotFound);
  EXPECT_EQ(rank1.live_regions(), 1u);
  EXPECT_TRUE(rank1.remove(mine).is_ok());
  EXPECT_EQ(rank1.live_regions(), 0u);
  EXPECT_EQ(rank1.check_local(mine.lkey, 0x1000, 64, Access::kNone).code(), StatusCode::kNotFound);
  EXPECT_EQ(rank1.check_remote(mine.rkey, 0x1000, 64, Access::kNone).code(), StatusCode::kNotFound);
  EXPECT_EQ(rank1.remove(mine).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tensorwire::sim::testing
