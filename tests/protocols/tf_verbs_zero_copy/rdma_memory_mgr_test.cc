#include "core/protocols/tf_verbs_zero_copy/rdma_memory_mgr.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/protocols/tf_verbs_zero_copy/fake_rank.h"

namespace tensorwire::tf_verbs {
namespace {

using testing::FakeMemory;
using testing::FakeNic;

class RdmaMemoryMgrTest : public ::testing::Test {
 protected:
  FakeNic nic_;
  FakeMemory memory_;
};

TEST_F(RdmaMemoryMgrTest, FindRegionCoversWholeRangesOnlyIncludingEdges) {
  RdmaMemoryMgr mgr(nic_, memory_);
  auto a = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 1000, Access::kLocalWrite);
  ASSERT_TRUE(a.is_ok());
  uint64_t base = a->buffer.addr;
  uint64_t len = a->region->length;  // the size class (>= 1000)
  ASSERT_GE(len, 1000u);
  // Exact, first byte, last byte, zero-length at both ends.
  EXPECT_TRUE(mgr.find_region(base, len).has_value());
  EXPECT_TRUE(mgr.find_region(base, 1).has_value());
  EXPECT_TRUE(mgr.find_region(base + len - 1, 1).has_value());
  EXPECT_TRUE(mgr.find_region(base + len, 0).has_value());
  EXPECT_EQ(mgr.find_region(base + 10, 20)->rkey, a->region->rkey);
  // Never a partial match: one byte too many at either end, or outside.
  EXPECT_FALSE(mgr.find_region(base, len + 1).has_value());
  EXPECT_FALSE(mgr.find_region(base - 1, 2).has_value());
  EXPECT_FALSE(mgr.find_region(base + len - 1, 2).has_value());
  EXPECT_FALSE(mgr.find_region(base + len, 1).has_value());
  EXPECT_FALSE(mgr.find_region(base - 1, 1).has_value());
  // Huge lengths do not wrap around.
  EXPECT_FALSE(mgr.find_region(base + 1, UINT64_MAX).has_value());
}

TEST_F(RdmaMemoryMgrTest, FindRegionNeverSpansTwoAdjacentRegions) {
  RdmaMemoryMgr mgr(nic_, memory_);
  Buffer a{0x100000, 4096, MemoryKind::kHostPinned, 0};
  Buffer b{0x101000, 4096, MemoryKind::kHostPinned, 0};
  ASSERT_TRUE(mgr.register_source(a).is_ok());
  ASSERT_TRUE(mgr.register_source(b).is_ok());
  EXPECT_EQ(mgr.find_region(0x100000, 4096)->addr, 0x100000u);
  EXPECT_EQ(mgr.find_region(0x101000, 4096)->addr, 0x101000u);
  EXPECT_FALSE(mgr.find_region(0x100800, 4096).has_value());  // straddles both
  EXPECT_FALSE(mgr.find_region(0x100000, 8192).has_value());
}

TEST_F(RdmaMemoryMgrTest, PoolReusesFreedBufferOfSameClassWithoutRegistering) {
  RdmaMemoryMgr mgr(nic_, memory_);
  const Access rw = Access::kLocalWrite | Access::kRemoteWrite;
  auto a = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 4000, rw);
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->buffer.length, 4000u);  // the caller sees exactly what it asked for
  EXPECT_EQ(mgr.registrations(), 1u);
  EXPECT_TRUE(mgr.release_registered(a->buffer));
  auto b = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 4000, rw);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->buffer.addr, a->buffer.addr);
  EXPECT_EQ(b->region->rkey, a->region->rkey);
  EXPECT_EQ(mgr.registrations(), 1u);
  // Same class, slightly different size: reused as well.
  EXPECT_TRUE(mgr.release_registered(b->buffer));
  auto c = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 3900, rw);
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->buffer.addr, a->buffer.addr);
  EXPECT_EQ(c->buffer.length, 3900u);
  EXPECT_EQ(mgr.registrations(), 1u);
}

TEST_F(RdmaMemoryMgrTest, PoolDoesNotMixKindsRightsOrInUseBuffers) {
  RdmaMemoryMgr mgr(nic_, memory_);
  const Access rw = Access::kLocalWrite | Access::kRemoteWrite;
  auto a = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 256, rw);
  auto b = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 256, rw);  // a in use
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_NE(a->buffer.addr, b->buffer.addr);
  ASSERT_TRUE(mgr.release_registered(a->buffer));
  auto local = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 256, Access::kLocalWrite);
  auto gpu = mgr.allocate_registered(MemoryKind::kDeviceGpuDirect, 1, 256, rw);
  ASSERT_TRUE(local.is_ok() && gpu.is_ok());
  EXPECT_NE(local->buffer.addr, a->buffer.addr);
  EXPECT_NE(gpu->buffer.addr, a->buffer.addr);
  EXPECT_EQ(gpu->buffer.kind, MemoryKind::kDeviceGpuDirect);
  EXPECT_EQ(gpu->buffer.device, 1u);
  EXPECT_EQ(mgr.registrations(), 4u);
  // Releasing twice or releasing a foreign buffer is refused, not corrupting.
  EXPECT_FALSE(mgr.release_registered(a->buffer));
  EXPECT_FALSE(mgr.release_registered(Buffer{0x7777, 10, MemoryKind::kHostPinned, 0}));
}

TEST_F(RdmaMemoryMgrTest, RegistersWithLeastPrivilege) {
  RdmaMemoryMgr mgr(nic_, memory_);
  Buffer source{0x200000, 1 << 20, MemoryKind::kHostPageable, 0};
  auto r = mgr.register_source(source);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->access, Access::kNone);  // the NIC only reads it
  EXPECT_FALSE(has_access(nic_.registered.at(source.addr).access, Access::kRemoteWrite));
  EXPECT_FALSE(has_access(nic_.registered.at(source.addr).access, Access::kRemoteRead));
  // Cached: the next Send of the same buffer (or a slice of it) registers nothing.
  ASSERT_TRUE(mgr.register_source(source).is_ok());
  ASSERT_TRUE(mgr.register_source(Buffer{0x200000 + 4096, 4096, MemoryKind::kHostPageable, 0})
                  .is_ok());
  EXPECT_EQ(nic_.registrations, 1u);
  // A result buffer gets remote write, never remote read.
  auto result = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 64,
                                        Access::kLocalWrite | Access::kRemoteWrite);
  ASSERT_TRUE(result.is_ok());
  EXPECT_TRUE(has_access(result->region->access, Access::kRemoteWrite));
  EXPECT_FALSE(has_access(result->region->access, Access::kRemoteRead));
  // GPU memory without GPUDirect cannot be registered at all.
  EXPECT_FALSE(mgr.register_source(Buffer{0x900000, 64, MemoryKind::kDeviceNoGpuDirect, 0})
                   .is_ok());
  EXPECT_FALSE(mgr.allocate_registered(MemoryKind::kDeviceNoGpuDirect, 0, 64,
                                       Access::kLocalWrite)
                   .is_ok());
  auto plain = mgr.allocate_unregistered(MemoryKind::kDeviceNoGpuDirect, 0, 64);
  ASSERT_TRUE(plain.is_ok());
  EXPECT_FALSE(mgr.find_region(plain->addr, 64).has_value());
}

TEST_F(RdmaMemoryMgrTest, StaleSourceRegistrationIsReplacedNotPartiallyMatched) {
  RdmaMemoryMgr mgr(nic_, memory_);
  ASSERT_TRUE(mgr.register_source(Buffer{0x300000, 4096, MemoryKind::kHostPinned, 0}).is_ok());
  // The memory was freed and a larger buffer now starts there.
  Buffer bigger{0x300000, 8192, MemoryKind::kHostPinned, 0};
  auto r = mgr.register_source(bigger);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->length, 8192u);
  EXPECT_EQ(nic_.registered.size(), 1u);  // the stale one was deregistered
  EXPECT_TRUE(mgr.find_region(0x300000, 8192).has_value());
}

TEST_F(RdmaMemoryMgrTest, DiscardDeregistersAndDestructorCleansUp) {
  {
    RdmaMemoryMgr mgr(nic_, memory_);
    auto a = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 100, Access::kLocalWrite);
    auto b = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 100, Access::kLocalWrite);
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    EXPECT_TRUE(mgr.discard(a->buffer));
    EXPECT_FALSE(mgr.find_region(a->buffer.addr, 1).has_value());
    EXPECT_EQ(nic_.registered.count(a->buffer.addr), 0u);
    ASSERT_TRUE(mgr.release_registered(b->buffer));
    ASSERT_TRUE(mgr.register_source(Buffer{0x500000, 64, MemoryKind::kHostPinned, 0}).is_ok());
  }
  EXPECT_TRUE(nic_.registered.empty());
  EXPECT_TRUE(memory_.live.empty());
}

TEST_F(RdmaMemoryMgrTest, AllocationFailureIsAnErrorAndLeavesNoRegistration) {
  RdmaMemoryMgr mgr(nic_, memory_);
  memory_.fail_next_allocation = true;
  auto a = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 100, Access::kLocalWrite);
  ASSERT_FALSE(a.is_ok());
  EXPECT_EQ(a.status().code(), StatusCode::kOutOfMemory);
  EXPECT_EQ(mgr.registrations(), 0u);
}

TEST_F(RdmaMemoryMgrTest, MetaDataCacheIsKeyedBySourceRankAndName) {
  RdmaMemoryMgr mgr(nic_, memory_);
  RdmaTensorMetaData m{DataType::kFloat32, TensorShape{{2, 3}}, false, 0};
  EXPECT_FALSE(mgr.get_tensor_meta_data(1, "w").has_value());
  mgr.set_tensor_meta_data(1, "w", m);
  EXPECT_EQ(*mgr.get_tensor_meta_data(1, "w"), m);
  EXPECT_FALSE(mgr.get_tensor_meta_data(2, "w").has_value());
  EXPECT_FALSE(mgr.get_tensor_meta_data(1, "v").has_value());
  RdmaTensorMetaData changed = m;
  changed.tensor_shape.dims = {4, 3};
  mgr.set_tensor_meta_data(1, "w", changed);
  EXPECT_EQ(*mgr.get_tensor_meta_data(1, "w"), changed);
  EXPECT_EQ(mgr.meta_data_cache_size(), 1u);
  mgr.erase_tensor_meta_data(1, "w");
  EXPECT_FALSE(mgr.get_tensor_meta_data(1, "w").has_value());
}

uint64_t digest_of(const RdmaMemoryMgr& mgr) {
  StateDigest d;
  mgr.digest(d);
  return d.value();
}

// The digest is kept between digests: every change of the cache, the
// regions or the pool must still show, and going back to an earlier state
// gives its digest again.
TEST_F(RdmaMemoryMgrTest, DigestFollowsEveryChange) {
  RdmaMemoryMgr mgr(nic_, memory_);
  const uint64_t empty = digest_of(mgr);
  EXPECT_EQ(digest_of(mgr), empty) << "nothing changed";
  RdmaTensorMetaData m{DataType::kFloat32, TensorShape{{2, 3}}, false, 0};
  mgr.set_tensor_meta_data(1, "w", m);
  const uint64_t with_meta = digest_of(mgr);
  EXPECT_NE(with_meta, empty);
  mgr.erase_tensor_meta_data(1, "w");
  EXPECT_EQ(digest_of(mgr), empty);
  auto a = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 1000, Access::kLocalWrite);
  ASSERT_TRUE(a.is_ok());
  const uint64_t in_use = digest_of(mgr);
  EXPECT_NE(in_use, empty);
  ASSERT_TRUE(mgr.release_registered(a->buffer));
  const uint64_t released = digest_of(mgr);
  EXPECT_NE(released, in_use);
  auto again = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 1000, Access::kLocalWrite);
  ASSERT_TRUE(again.is_ok());
  const uint64_t reused = digest_of(mgr);
  EXPECT_NE(reused, released) << "the buffer in use again";
  ASSERT_TRUE(mgr.discard(again->buffer));
  const uint64_t discarded = digest_of(mgr);
  EXPECT_NE(discarded, reused);
  Buffer source{0x100000, 4096, MemoryKind::kHostPinned, 0};
  ASSERT_TRUE(mgr.register_source(source).is_ok());
  const uint64_t with_source = digest_of(mgr);
  EXPECT_NE(with_source, discarded);
  mgr.forget_source(source);
  EXPECT_EQ(digest_of(mgr), discarded);
}

// The meta-data cache is hashed: the same entries give the same digest
// whatever order they were set in (a model checker's states must not depend
// on the order of events that reached them).
TEST_F(RdmaMemoryMgrTest, DigestIgnoresTheOrderTheCacheWasFilledIn) {
  RdmaMemoryMgr forward(nic_, memory_);
  RdmaMemoryMgr backward(nic_, memory_);
  RdmaTensorMetaData m{DataType::kFloat32, TensorShape{{2, 3}}, false, 0};
  std::vector<std::pair<RankId, std::string>> keys;
  for (RankId rank = 0; rank < 8; ++rank) {
    for (int t = 0; t < 40; ++t) keys.emplace_back(rank, "layer" + std::to_string(t) + "/w");
  }
  for (const auto& [rank, name] : keys) forward.set_tensor_meta_data(rank, name, m);
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    backward.set_tensor_meta_data(it->first, it->second, m);
  }
  EXPECT_EQ(digest_of(forward), digest_of(backward));
  backward.erase_tensor_meta_data(3, "layer7/w");
  EXPECT_NE(digest_of(forward), digest_of(backward));
}

TEST(RdmaTensorMetaDataTest, ByteSizeAndEquality) {
  RdmaTensorMetaData f{DataType::kFloat32, TensorShape{{2, 3}}, false, 0};
  EXPECT_EQ(f.byte_size(), 24u);
  RdmaTensorMetaData dead = f;
  dead.is_dead = true;
  EXPECT_EQ(dead.byte_size(), 0u);
  EXPECT_NE(dead, f);
  RdmaTensorMetaData s{DataType::kString, TensorShape{{5}}, false, 77};
  EXPECT_EQ(s.byte_size(), 77u);
  RdmaTensorMetaData empty{DataType::kInt64, TensorShape{{0, 7}}, false, 0};
  EXPECT_EQ(empty.byte_size(), 0u);
  EXPECT_TRUE(empty.validate(1 << 20).is_ok());
  RdmaTensorMetaData negative{DataType::kInt64, TensorShape{{-1}}, false, 0};
  EXPECT_FALSE(negative.validate(1 << 20).is_ok());
  RdmaTensorMetaData huge{DataType::kFloat64, TensorShape{{1 << 20, 1 << 20}}, false, 0};
  EXPECT_FALSE(huge.validate(uint64_t{1} << 40).is_ok());
}

TEST(RdmaTensorMetaDataTest, AStringTensorsElementCountMustFitItsProtoSize) {
  // 5 elements need at least 8 (count) + 5 * 8 (lengths) = 48 bytes.
  RdmaTensorMetaData fits{DataType::kString, TensorShape{{5}}, false, 48};
  EXPECT_TRUE(fits.validate(1 << 20).is_ok());
  RdmaTensorMetaData short_by_one{DataType::kString, TensorShape{{5}}, false, 47};
  EXPECT_EQ(short_by_one.validate(1 << 20).code(), StatusCode::kMalformedMessage);
  // A peer claiming 2^40 elements in a 1 KiB proto is rejected before anything is built.
  RdmaTensorMetaData absurd{DataType::kString, TensorShape{{1 << 20, 1 << 20}}, false, 1024};
  EXPECT_EQ(absurd.validate(1 << 20).code(), StatusCode::kMalformedMessage);
  RdmaTensorMetaData empty{DataType::kString, TensorShape{{0}}, false, 8};
  EXPECT_TRUE(empty.validate(1 << 20).is_ok());
  RdmaTensorMetaData dead{DataType::kString, TensorShape{{1 << 20}}, true, 0};
  EXPECT_TRUE(dead.validate(1 << 20).is_ok());
}

}  // namespace
}  // namespace tensorwire::tf_verbs
