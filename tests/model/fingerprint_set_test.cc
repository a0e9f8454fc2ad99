// The state cache's set of fingerprints against std::set: the same members
// and counts whatever the values (0, values that share low or high bits, many
// enough to grow the table several times).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "core/splitmix64.h"
#include "model/fingerprint_set.h"

namespace tensorwire::model {
namespace {

TEST(FingerprintSet, HoldsWhatStdSetHolds) {
  FingerprintSet set;
  std::set<uint64_t> expected;
  uint64_t seed = 7;
  for (int i = 0; i < 20000; ++i) {
    // Drawn from a small range half the time, so values repeat; shifted so
    // that some share every low bit and others every high bit.
    uint64_t v = splitmix64(seed);
    if (i % 2 == 0) v %= 5000;
    if (i % 3 == 0) v <<= 40;
    EXPECT_EQ(set.insert(v), expected.insert(v).second) << v;
  }
  EXPECT_EQ(set.size(), expected.size());
  for (uint64_t v : expected) EXPECT_TRUE(set.contains(v)) << v;
  EXPECT_FALSE(set.contains(uint64_t{1} << 63 | 12345));
  std::vector<uint64_t> values = set.values();
  std::sort(values.begin(), values.end());
  EXPECT_EQ(values, std::vector<uint64_t>(expected.begin(), expected.end()));
}

// A random walk's fingerprints go in as a batch (sized first, fetched
// ahead): the same members as one at a time, batches of every length.
TEST(FingerprintSet, BatchesHoldWhatSingleInsertsHold) {
  FingerprintSet batched;
  std::set<uint64_t> expected;
  uint64_t seed = 11;
  for (size_t batch = 0; batch < 400; ++batch) {
    std::vector<uint64_t> values(batch % 70);
    for (uint64_t& v : values) {
      v = splitmix64(seed);
      if (v % 4 == 0) v %= 3000;  // repeats, within and across batches, and 0
    }
    batched.insert(values.begin(), values.end());
    expected.insert(values.begin(), values.end());
    ASSERT_EQ(batched.size(), expected.size()) << "after batch " << batch;
  }
  std::vector<uint64_t> values = batched.values();
  std::sort(values.begin(), values.end());
  EXPECT_EQ(values, std::vector<uint64_t>(expected.begin(), expected.end()));
}

TEST(FingerprintSet, ZeroIsAMemberLikeAnyOther) {
  FingerprintSet set;
  EXPECT_TRUE(set.empty());
  EXPECT_FALSE(set.contains(0));
  EXPECT_TRUE(set.insert(0));
  EXPECT_FALSE(set.insert(0));
  EXPECT_TRUE(set.contains(0));
  EXPECT_TRUE(set.insert(1));
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(set.values().size(), 2u);
}

}  // namespace
}  // namespace tensorwire::model
