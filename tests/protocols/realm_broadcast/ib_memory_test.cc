// IBMemory: first-fit blocks with a reference count per block, keyed by offset.
#include "core/protocols/realm_broadcast/ib_memory.h"

#include <gtest/gtest.h>

namespace tensorwire::collectives {
namespace {

TEST(IBMemory, BlockIsFreedOnlyWhenItsLastConsumerLetsGo) {
  IBMemory pool(1 << 20);
  auto a = pool.do_alloc(4096, 3);
  ASSERT_TRUE(a);
  EXPECT_EQ(pool.ref_count(*a), 3u);
  EXPECT_FALSE(*pool.do_free(*a));
  EXPECT_FALSE(*pool.do_free(*a));
  EXPECT_EQ(pool.bytes_in_use(), 4096u);
  EXPECT_TRUE(*pool.do_free(*a));
  EXPECT_EQ(pool.bytes_in_use(), 0u);
  EXPECT_EQ(pool.live_blocks(), 0u);
}

TEST(IBMemory, FreeingAFreedBlockIsAnErrorNotACrash) {
  IBMemory pool(8192);
  auto a = pool.do_alloc(100, 1);
  ASSERT_TRUE(a);
  ASSERT_TRUE(*pool.do_free(*a));
  auto again = pool.do_free(*a);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.status().code(), StatusCode::kNotFound);
}

TEST(IBMemory, FirstFitReusesTheHoleAFreedBlockLeaves) {
  IBMemory pool(3 * 4096);
  auto a = pool.do_alloc(4096, 1);
  auto b = pool.do_alloc(4096, 1);
  auto c = pool.do_alloc(4096, 1);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b, 4096u);
  EXPECT_EQ(*c, 8192u);
  auto full = pool.do_alloc(1, 1);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.status().code(), StatusCode::kOutOfMemory);
  ASSERT_TRUE(*pool.do_free(*b));
  auto d = pool.do_alloc(4000, 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, 4096u);
  EXPECT_EQ(pool.peak_bytes_in_use(), 3u * 4096);
}

TEST(IBMemory, ZeroByteBlocksHaveDistinctOffsetsAndTakeNoSpace) {
  IBMemory pool(4096);
  auto a = pool.do_alloc(0, 2);
  auto b = pool.do_alloc(0, 1);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(pool.bytes_in_use(), 0u);
  EXPECT_TRUE(pool.do_alloc(4096, 1));
  EXPECT_FALSE(*pool.do_free(*a));
  EXPECT_TRUE(*pool.do_free(*a));
  EXPECT_TRUE(*pool.do_free(*b));
}

TEST(IBMemory, ABlockWithoutConsumersIsRefused) {
  IBMemory pool(4096);
  EXPECT_FALSE(pool.do_alloc(16, 0));
}

}  // namespace
}  // namespace tensorwire::collectives
