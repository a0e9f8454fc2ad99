#include "core/protocols/tf_verbs_zero_copy/request_index_allocator.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <set>

#include "core/protocols/tf_verbs_zero_copy/rdma_imm_data.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_write_id.h"

namespace tensorwire::tf_verbs {
namespace {

TEST(RequestIndexAllocatorTest, WrapsAroundBeforeTheReservedImmediates) {
  RequestIndexAllocator alloc;  // the real range
  EXPECT_EQ(alloc.max_index(), static_cast<uint32_t>(kMaxRequestId));
  EXPECT_TRUE(is_reserved_imm(kAck));
  EXPECT_TRUE(is_reserved_imm(kMessage));
  EXPECT_FALSE(is_reserved_imm(kMaxRequestId));
  RequestIndexAllocator small(3);
  std::vector<uint32_t> got;
  for (int i = 0; i < 10; ++i) {
    auto idx = small.allocate();
    ASSERT_TRUE(idx.is_ok());
    got.push_back(*idx);
    small.release(*idx);
  }
  EXPECT_EQ(got, (std::vector<uint32_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1}));
}

TEST(RequestIndexAllocatorTest, SkipsOutstandingIndicesAfterWrapping) {
  RequestIndexAllocator alloc(4);
  auto a = alloc.allocate();  // 0, kept outstanding
  auto b = alloc.allocate();  // 1
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  alloc.release(*b);
  std::vector<uint32_t> got;
  for (int i = 0; i < 6; ++i) {
    auto idx = alloc.allocate();
    ASSERT_TRUE(idx.is_ok());
    EXPECT_NE(*idx, *a);
    got.push_back(*idx);
    alloc.release(*idx);
  }
  EXPECT_EQ(got, (std::vector<uint32_t>{2, 3, 4, 1, 2, 3}));
}

TEST(RequestIndexAllocatorTest, AllInUseIsAnErrorNotALoop) {
  RequestIndexAllocator alloc(2);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(alloc.allocate().is_ok());
  auto full = alloc.allocate();
  ASSERT_FALSE(full.is_ok());
  EXPECT_EQ(full.status().code(), StatusCode::kNoResource);
  alloc.release(1);
  auto again = alloc.allocate();
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, 1u);
}

// The outstanding indices are a hashed set: equal sets digest equally,
// whatever order they were released in.
TEST(RequestIndexAllocatorTest, DigestIgnoresTheOrderOfReleases) {
  auto digest_after = [](bool forward) {
    RequestIndexAllocator alloc;
    for (int i = 0; i < 200; ++i) EXPECT_TRUE(alloc.allocate().is_ok());
    for (uint32_t i = 0; i < 200; i += 3) alloc.release(forward ? i : 198 - i);
    StateDigest d;
    alloc.digest(d);
    return d.value();
  };
  EXPECT_EQ(digest_after(true), digest_after(false));
  RequestIndexAllocator fewer;
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(fewer.allocate().is_ok());
  StateDigest d;
  fewer.digest(d);
  EXPECT_NE(d.value(), digest_after(true));
}

RC_GTEST_PROP(RequestIndexAllocatorProperty, NeverHandsOutAnOutstandingIndex,
              (const std::vector<bool>& ops)) {
  const uint32_t max_index = *rc::gen::inRange<uint32_t>(0, 8);
  RequestIndexAllocator alloc(max_index);
  std::set<uint32_t> outstanding;
  size_t pick = 0;
  for (bool allocate : ops) {
    if (allocate || outstanding.empty()) {
      auto idx = alloc.allocate();
      if (outstanding.size() == max_index + 1u) {
        RC_ASSERT(!idx.is_ok());
        continue;
      }
      RC_ASSERT(idx.is_ok());
      RC_ASSERT(*idx <= max_index);
      RC_ASSERT(outstanding.insert(*idx).second);
    } else {
      auto it = outstanding.begin();
      std::advance(it, pick++ % outstanding.size());
      alloc.release(*it);
      outstanding.erase(it);
    }
    RC_ASSERT(alloc.outstanding() == outstanding.size());
  }
}

TEST(RdmaWriteIdTest, RoundTripsAndRejectsForeignIds) {
  for (auto type : {RdmaWriteIDType::kControlMessage, RdmaWriteIDType::kTensorWrite,
                    RdmaWriteIDType::kTensorProtoWrite, RdmaWriteIDType::kRingReceive}) {
    RdmaWriteID id{type, RdmaWriteID::kMaxContext};
    auto back = RdmaWriteID::decode(id.encode());
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, id);
  }
  EXPECT_FALSE(RdmaWriteID::decode(0).has_value());
  EXPECT_FALSE(RdmaWriteID::decode(~uint64_t{0}).has_value());
}

}  // namespace
}  // namespace tensorwire::tf_verbs
