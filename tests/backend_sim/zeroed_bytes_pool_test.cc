// ZeroedBytesPool, and simulated memory through it: what an allocation gets
// is all zero whatever the previous owner of its bytes wrote, by every path.
#include "backend_sim/zeroed_bytes_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

template <typename Bytes>
bool all_zero(const Bytes& v) {
  return std::all_of(v.begin(), v.end(), [](std::byte b) { return b == std::byte{0}; });
}

TEST(ZeroedBytesPool, AVectorGivenBackIsHandedOutAgainZeroed) {
  ZeroedBytesPool pool;
  ZeroedBytes v = pool.take(8192);
  ASSERT_EQ(v.size(), 8192u);
  EXPECT_TRUE(all_zero(v));
  std::fill(v.begin() + 100, v.begin() + 300, std::byte{0x5a});
  const std::byte* storage = v.data();
  pool.give_back(std::move(v), 100, 300);
  EXPECT_EQ(pool.pooled_bytes(), 8192u);
  ZeroedBytes again = pool.take(8192);
  EXPECT_EQ(again.data(), storage) << "the same storage, not a fresh allocation";
  EXPECT_TRUE(all_zero(again));
  EXPECT_EQ(pool.pooled_bytes(), 0u);
}

TEST(ZeroedBytes, StartsZeroAtEverySizeAndMovesItsStorage) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{1} << 20, size_t{64} << 20}) {
    ZeroedBytes v(size);
    ASSERT_EQ(v.size(), size);
    EXPECT_TRUE(all_zero(v)) << size << " bytes";
    if (size == 0) continue;
    v.data()[size - 1] = std::byte{7};
    const std::byte* storage = v.data();
    ZeroedBytes moved = std::move(v);
    EXPECT_EQ(moved.data(), storage);
    EXPECT_TRUE(v.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    EXPECT_EQ(moved.span().back(), std::byte{7});
  }
}

TEST(ZeroedBytesPool, OnlyTheSameSizeIsReused) {
  ZeroedBytesPool pool;
  ZeroedBytes v = pool.take(8192);
  const std::byte* storage = v.data();
  pool.give_back(std::move(v), 0, 0);
  ZeroedBytes other = pool.take(4096);
  EXPECT_NE(other.data(), storage);
  EXPECT_EQ(other.size(), 4096u);
  EXPECT_EQ(pool.pooled_bytes(), 8192u);
}

TEST(ZeroedBytesPool, KeepsNeitherSmallNorLargeVectorsNorMoreThanItsLimit) {
  ZeroedBytesPool pool;
  pool.give_back(ZeroedBytes(ZeroedBytesPool::kMinBytes - 1), 0, 0);
  pool.give_back(ZeroedBytes(ZeroedBytesPool::kMaxBytes + 1), 0, 0);
  EXPECT_EQ(pool.pooled_bytes(), 0u);
  const uint64_t n = ZeroedBytesPool::kMaxPooledBytes / ZeroedBytesPool::kMaxBytes;
  for (uint64_t i = 0; i <= n; ++i) {
    pool.give_back(ZeroedBytes(ZeroedBytesPool::kMaxBytes), 0, 0);
  }
  EXPECT_EQ(pool.pooled_bytes(), n * ZeroedBytesPool::kMaxBytes);
}

// Writes 0xff into `b` (8 KiB of host memory) by one path.
using Write = std::function<void(MemorySpace&, const Buffer&)>;

void expect_fresh_allocations_zero_after(const Write& write) {
  constexpr uint64_t kBytes = 8192;
  Cluster c;
  c.nodes = 1;
  for (int round = 0; round < 3; ++round) {
    SimFixture f(c);
    MemorySpace& m = f.env(0).memory;
    Buffer b = *m.allocate(MemoryKind::kHostPinned, 0, kBytes);
    std::vector<std::byte> seen(kBytes, std::byte{1});
    ASSERT_TRUE(m.read_bytes(b, 0, seen).is_ok());
    EXPECT_TRUE(all_zero(seen)) << "round " << round;
    write(m, b);
    Buffer freed_early = *m.allocate(MemoryKind::kHostPinned, 0, kBytes);
    write(m, freed_early);
    m.free(freed_early);  // back by free; `b` goes back with the fixture
    Buffer after_free = *m.allocate(MemoryKind::kHostPinned, 0, kBytes);
    ASSERT_TRUE(m.read_bytes(after_free, 0, seen).is_ok());
    EXPECT_TRUE(all_zero(seen)) << "round " << round;
  }
}

TEST(SimMemoryZeroedBytes, FreshAllocationsAreZeroAfterWriteBytes) {
  expect_fresh_allocations_zero_after([](MemorySpace& m, const Buffer& b) {
    std::vector<std::byte> data(100, std::byte{0xff});
    ASSERT_TRUE(m.write_bytes(b, 5000, data).is_ok());
  });
}

TEST(SimMemoryZeroedBytes, FreshAllocationsAreZeroAfterHostViewWrites) {
  expect_fresh_allocations_zero_after([](MemorySpace& m, const Buffer& b) {
    Buffer tail = b;
    tail.addr += 4096;
    tail.length = 4096;
    std::span<std::byte> view = m.host_view(tail);
    ASSERT_EQ(view.size(), 4096u);
    std::fill(view.begin(), view.end(), std::byte{0xff});
  });
}

TEST(SimMemoryZeroedBytes, FreshAllocationsAreZeroAfterCpuCopies) {
  expect_fresh_allocations_zero_after([](MemorySpace& m, const Buffer& b) {
    Buffer src = *m.allocate(MemoryKind::kHostPinned, 0, 64);
    std::vector<std::byte> data(64, std::byte{0xff});
    ASSERT_TRUE(m.write_bytes(src, 0, data).is_ok());
    ASSERT_TRUE(m.cpu_copy(b, 8000, src, 0, 64).is_ok());
  });
}

// The adversarial allocator poisons reused memory: those bytes too are
// zero once the next simulation gets them.
TEST(SimMemoryZeroedBytes, PoisonedBytesAreZeroInTheNextSimulation) {
  Cluster c;
  c.nodes = 1;
  SimOptions options;
  options.payload = true;
  options.adversarial_memory = true;
  std::vector<std::byte> seen(8192);
  for (int round = 0; round < 3; ++round) {
    SimFixture f(c, options);
    MemorySpace& m = f.env(0).memory;
    Buffer first = *m.allocate(MemoryKind::kHostPinned, 0, 8192);
    ASSERT_TRUE(m.read_bytes(first, 0, seen).is_ok());
    EXPECT_TRUE(all_zero(seen)) << "round " << round;
    m.free(first);
    Buffer reused = *m.allocate(MemoryKind::kHostPinned, 0, 8192);
    ASSERT_EQ(reused.addr, first.addr);
    ASSERT_TRUE(m.read_bytes(reused, 0, seen).is_ok());
    EXPECT_EQ(seen[0], std::byte{0xd5}) << "reused memory is poisoned";
    EXPECT_EQ(seen[8191], std::byte{0xd5});
  }
}


// Writes drawn over a run, some overlapping or touching, some apart: after
// zero() every written byte is zero again (the ranges cover every write),
// and after no more than kMaxRanges writes a byte no write touched keeps
// what it held (the ranges are not one bounding range).
TEST(DirtyRanges, CoverEveryWriteAndOnlyTheWritesWhileFew) {
  std::mt19937_64 rng(8);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::byte> run(4096, std::byte{0x11});  // 0x11: never written
    DirtyRanges dirty;
    std::vector<bool> written(run.size(), false);
    const int writes = 1 + static_cast<int>(rng() % 20);
    for (int w = 0; w < writes; ++w) {
      const uint64_t begin = rng() % run.size();
      const uint64_t end = std::min<uint64_t>(run.size(), begin + 1 + rng() % 300);
      dirty.add(begin, end);
      for (uint64_t i = begin; i < end; ++i) written[i] = true;
      ASSERT_TRUE(dirty.covers(begin, end)) << "round " << round;
    }
    dirty.zero(run);
    for (size_t i = 0; i < run.size(); ++i) {
      if (written[i]) {
        ASSERT_EQ(run[i], std::byte{0}) << "round " << round << " byte " << i;
      } else if (static_cast<size_t>(writes) <= DirtyRanges::kMaxRanges) {
        ASSERT_EQ(run[i], std::byte{0x11}) << "round " << round << " byte " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tensorwire::sim::testing
