// DenseIdMap against std::map over random inserts, lookups and erases of ids
// handed out in increasing order (as work request sequence numbers and
// registrations are), and its chunks freed once empty.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "backend_sim/dense_id_map.h"

namespace tensorwire::sim::testing {
namespace {

TEST(DenseIdMap, FindsEraseAndSizeAgreeWithAnOrderedMapOverRandomOperations) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    DenseIdMap<uint64_t, 4> map;  // small chunks: many chunk boundaries
    std::map<uint64_t, uint64_t> reference;
    uint64_t next_id = rng() % 3;  // ids need not start at 0
    for (int op = 0; op < 4000; ++op) {
      const uint32_t what = rng() % 10;
      if (what < 4) {
        next_id += 1 + rng() % 3;  // increasing, with gaps
        const uint64_t value = rng();
        EXPECT_EQ(map.insert(next_id, value), value);
        reference[next_id] = value;
      } else if (what < 7 && !reference.empty()) {
        // Mostly the oldest (as completions come), sometimes any.
        auto it = rng() % 2 == 0 ? reference.begin() : std::next(reference.begin(), rng() % reference.size());
        EXPECT_TRUE(map.erase(it->first));
        reference.erase(it);
      } else {
        const uint64_t id = next_id == 0 ? 0 : rng() % (next_id + 20);
        const uint64_t* found = map.find(id);
        auto ref = reference.find(id);
        ASSERT_EQ(found != nullptr, ref != reference.end()) << "seed " << seed << " id " << id;
        if (found != nullptr) {
          EXPECT_EQ(*found, ref->second);
        } else {
          EXPECT_FALSE(map.erase(id));
        }
      }
      ASSERT_EQ(map.size(), reference.size()) << "seed " << seed << " op " << op;
    }
    for (const auto& [id, value] : reference) {
      ASSERT_NE(map.find(id), nullptr);
      EXPECT_EQ(*map.find(id), value);
    }
  }
}

TEST(DenseIdMap, AnEmptiedChunkIsFreedAndAReusedOneStartsEmpty) {
  DenseIdMap<int, 2> map;  // four ids per chunk
  for (uint64_t id = 0; id < 12; ++id) map.insert(id, static_cast<int>(id));
  EXPECT_EQ(map.chunks_held(), 3u);
  for (uint64_t id = 0; id < 8; ++id) EXPECT_TRUE(map.erase(id));
  EXPECT_EQ(map.chunks_held(), 1u) << "the two emptied chunks are freed";
  EXPECT_EQ(map.size(), 4u);
  for (uint64_t id = 0; id < 8; ++id) EXPECT_EQ(map.find(id), nullptr);
  for (uint64_t id = 8; id < 12; ++id) EXPECT_TRUE(map.erase(id));
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.chunks_held(), 1u) << "the newest chunk stays for the next id";
  // The newest chunk stayed for the next insert; an id far above works too.
  map.insert(12, 12);
  EXPECT_EQ(map.chunks_held(), 1u);
  EXPECT_TRUE(map.erase(12));
  map.insert(1000, 1000);
  EXPECT_EQ(map.chunks_held(), 1u) << "moving on frees the old newest chunk once empty";
  EXPECT_EQ(map.find(12), nullptr);
  EXPECT_EQ(*map.find(1000), 1000);
  EXPECT_EQ(map.find(999), nullptr);
  EXPECT_EQ(map.find(uint64_t{1} << 40), nullptr);
}

// Ids move on a chunk at a time: the chunk emptied behind them is the one
// the next chunk of ids takes, empty, rather than a new allocation.
TEST(DenseIdMap, TheNextChunkOfIdsTakesTheOneEmptiedBehindThem) {
  DenseIdMap<int, 2> map;  // four ids per chunk
  for (uint64_t id = 0; id < 4; ++id) map.insert(id, static_cast<int>(id));
  const int* first_of_chunk_0 = map.find(0);
  for (uint64_t id = 0; id < 4; ++id) EXPECT_TRUE(map.erase(id));
  EXPECT_FALSE(map.has_spare()) << "the newest chunk stays where it is";
  map.insert(4, 4);  // moving on: chunk 0 is empty, so it is the spare, taken at once
  EXPECT_EQ(map.find(4), first_of_chunk_0) << "chunk 1 is chunk 0's storage";
  EXPECT_FALSE(map.has_spare()) << "the spare was taken";
  EXPECT_EQ(map.chunks_held(), 1u);
  for (uint64_t id = 0; id < 8; ++id) {
    if (id != 4) {
      EXPECT_EQ(map.find(id), nullptr) << id << ": a reused chunk starts empty";
    }
  }
  // A chunk emptied behind a newer one becomes the spare too.
  map.insert(8, 8);  // chunk 2, while chunk 1 still holds 4
  EXPECT_EQ(map.chunks_held(), 2u);
  const int* first_of_chunk_1 = map.find(4);
  EXPECT_TRUE(map.erase(4));
  EXPECT_EQ(map.chunks_held(), 1u);
  EXPECT_TRUE(map.has_spare()) << "chunk 1, emptied behind chunk 2, is kept";
  EXPECT_TRUE(map.erase(8));
  map.insert(12, 12);
  EXPECT_FALSE(map.has_spare()) << "chunk 3 took it; chunk 2, emptied, is freed";
  EXPECT_EQ(map.find(12), first_of_chunk_1);
  EXPECT_EQ(*map.find(12), 12);
  EXPECT_EQ(map.find(13), nullptr);
  EXPECT_EQ(map.size(), 1u);
}

}  // namespace
}  // namespace tensorwire::sim::testing
