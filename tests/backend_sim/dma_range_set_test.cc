// The sanitizer's per-rank set of in-flight ranges: through the vector it
// starts with and the index it keeps past DmaRangeSet::kIndexFrom ranges, it
// finds exactly the ranges a plain scan finds, ends exactly what a plain
// scan ends, and goes back to the vector once empty.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "backend_sim/dma_range_set.h"

namespace tensorwire::sim::testing {
namespace {

using Found = std::vector<std::tuple<uint64_t, uint64_t, uint64_t, bool>>;  // id, addr, end, write

Found sorted(Found f) {
  std::sort(f.begin(), f.end());
  return f;
}

struct Reference {
  std::vector<InFlightDma> ranges;
  uint32_t erase(uint64_t id, bool writes_only) {
    uint32_t writes = 0;
    std::vector<InFlightDma> kept;
    for (const InFlightDma& e : ranges) {
      if (e.id == id && (e.write || !writes_only)) {
        writes += e.write ? 1 : 0;
      } else {
        kept.push_back(e);
      }
    }
    ranges = kept;
    return writes;
  }
  Found overlapping(uint64_t addr, uint64_t end) const {
    Found f;
    for (const InFlightDma& e : ranges) {
      if (addr < e.end && e.addr < end) f.emplace_back(e.id, e.addr, e.end, e.write);
    }
    return sorted(f);
  }
};

Found overlapping(const DmaRangeSet& set, uint64_t addr, uint64_t end) {
  Found f;
  set.for_each_overlapping(addr, end, [&](const InFlightDma& e) { f.emplace_back(e.id, e.addr, e.end, e.write); });
  return sorted(f);
}

// Lengths from one byte to gigabytes, addresses that collide often (equal
// ranges, nested ranges, neighbours) and sometimes far apart.
uint64_t draw_length(std::mt19937_64& rng) {
  const uint64_t scale = uint64_t{1} << (rng() % 34);
  return 1 + rng() % scale;
}

TEST(DmaRangeSet, FindsAndEndsWhatAPlainScanDoesThroughTheVectorAndTheIndex) {
  std::mt19937_64 rng(25);
  for (int round = 0; round < 40; ++round) {
    DmaRangeSet set;
    Reference ref;
    uint64_t next_id = 1;
    std::vector<uint64_t> live_ids;
    const size_t peak = 1 + rng() % (3 * DmaRangeSet::kIndexFrom);
    for (int op = 0; op < 1500; ++op) {
      const bool grow = live_ids.empty() || (ref.ranges.size() < peak && rng() % 2 == 0);
      if (grow) {
        const uint64_t id = next_id++;
        const int parts = 1 + static_cast<int>(rng() % 2);  // a read, and maybe a write
        for (int p = 0; p < parts; ++p) {
          const bool write = parts == 2 ? p == 1 : rng() % 2 == 0;
          const uint64_t addr = (rng() % 64) * 4096 + (rng() % 4 == 0 ? rng() % 100000 : 0);
          const uint64_t length = draw_length(rng);
          DmaOp dma_op;
          dma_op.wr_id = id;
          set.add(addr, length, id, dma_op, write);
          ref.ranges.push_back({addr, addr + length, id, dma_op, write});
        }
        live_ids.push_back(id);
      } else {
        const size_t pick = rng() % live_ids.size();
        const uint64_t id = live_ids[pick];
        const bool writes_only = rng() % 3 == 0;
        ASSERT_EQ(set.erase(id, writes_only), ref.erase(id, writes_only)) << "round " << round;
        const bool gone = std::none_of(ref.ranges.begin(), ref.ranges.end(),
                                       [id](const InFlightDma& e) { return e.id == id; });
        if (gone) live_ids.erase(live_ids.begin() + static_cast<std::ptrdiff_t>(pick));
      }
      ASSERT_EQ(set.size(), ref.ranges.size()) << "round " << round << " op " << op;
      const uint64_t addr = (rng() % 80) * 4096 + rng() % 8192;
      const uint64_t end = addr + draw_length(rng);
      ASSERT_EQ(overlapping(set, addr, end), ref.overlapping(addr, end)) << "round " << round << " op " << op;
    }
  }
}

TEST(DmaRangeSet, GoesBackToTheVectorOnceEmptyAndKeepsWorking) {
  DmaRangeSet set;
  const DmaOp op;
  for (uint64_t id = 1; id <= 2 * DmaRangeSet::kIndexFrom; ++id) set.add(id * 100, 50, id, op, id % 2 == 0);
  EXPECT_EQ(set.size(), 2 * DmaRangeSet::kIndexFrom);
  EXPECT_EQ(overlapping(set, 149, 201).size(), 2u);  // [100,150) and [200,250)
  uint32_t writes = 0;
  for (uint64_t id = 1; id <= 2 * DmaRangeSet::kIndexFrom; ++id) writes += set.erase(id, false);
  EXPECT_EQ(writes, DmaRangeSet::kIndexFrom);
  EXPECT_TRUE(set.empty());
  set.add(0, 10, 7, op, true);
  EXPECT_EQ(overlapping(set, 9, 10).size(), 1u);
  EXPECT_EQ(set.erase(7, /*writes_only=*/true), 1u);
  EXPECT_TRUE(set.empty());
}

}  // namespace
}  // namespace tensorwire::sim::testing
