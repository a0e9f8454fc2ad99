// PostedRequests: a queue pair's posted requests in sequence order, found by
// sequence number at either end or in the middle, erased from the front (a
// completion) or from the middle, and iterated in order.
#include "backend_sim/posted_requests.h"

#include <gtest/gtest.h>

#include <vector>

namespace tensorwire::sim::testing {
namespace {

SendWorkRequest request(uint64_t wr_id) {
  SendWorkRequest wr;
  wr.wr_id = wr_id;
  return wr;
}

std::vector<uint64_t> sequences(const PostedRequests& posted) {
  std::vector<uint64_t> seqs;
  for (const auto& [seq, wr] : posted) seqs.push_back(seq);
  return seqs;
}

TEST(PostedRequests, FindsAnyRequestAndErasesFromEitherPlace) {
  PostedRequests posted;
  EXPECT_EQ(posted.find(1), posted.end());
  for (uint64_t seq : {3, 5, 8, 13, 21}) posted.emplace(seq, request(seq * 10));
  for (uint64_t seq : {3, 5, 8, 13, 21}) {
    auto it = posted.find(seq);
    ASSERT_NE(it, posted.end()) << seq;
    EXPECT_EQ(it->second.wr_id, seq * 10);
    EXPECT_EQ(posted.count(seq), 1u);
  }
  for (uint64_t absent : {0, 4, 9, 22}) {
    EXPECT_EQ(posted.find(absent), posted.end()) << absent;
    EXPECT_EQ(posted.count(absent), 0u);
  }
  posted.erase(posted.find(3));   // the oldest, as a completion does
  posted.erase(posted.find(13));  // the middle
  EXPECT_EQ(sequences(posted), (std::vector<uint64_t>{5, 8, 21}));
  EXPECT_EQ(posted.find(21)->second.wr_id, 210u);
  EXPECT_EQ(posted.front().first, 5u);
  EXPECT_EQ(posted.back().first, 21u);
  posted.clear();
  EXPECT_TRUE(posted.empty());
}

}  // namespace
}  // namespace tensorwire::sim::testing
