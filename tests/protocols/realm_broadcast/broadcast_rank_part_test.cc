// BroadcastRankPart: what a rank of a one-process-per-rank broadcast tells the
// others. It round-trips exactly, and a malformed part (from a peer process)
// is an error naming the rank and what is wrong, never a crash or a part
// naming buffers the plan does not have.
#include "core/protocols/realm_broadcast/broadcast_rank_part.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace tensorwire::collectives {
namespace {

BroadcastRankPart sample_part() {
  BroadcastRankPart part;
  part.rank = 2;
  part.counters = {{"chunks", CounterRole::kContentTransfer, 41},
                   {"control_messages", CounterRole::kControlMessage, 7},
                   {"peak_ib_bytes", CounterRole::kOther, 65536}};
  part.problems = {liveness_problem("rank 2 went idle with its part of the broadcast unfinished", 2),
                   safety_problem("invariant: node2/gpu1: byte 17 differs from the source", 2)};
  part.destination_done_ns = {{3, 1200}, {5, 3400}};
  part.copy_first_busy_ns = {{0, 10}, {4, 900}};
  part.coverage.count(BroadcastPath::kNetworkChunk);
  part.coverage.count(BroadcastPath::kRingWrapped);
  part.coverage.count_sent(CollectiveMessageType::kIbReady);
  part.coverage.count_received(CollectiveMessageType::kAbort);
  return part;
}

TEST(BroadcastRankPart, RoundTripsEveryField) {
  const BroadcastRankPart part = sample_part();
  Result<BroadcastRankPart> back = decode_broadcast_rank_part(encode_broadcast_rank_part(part), 2, 8, 8);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->rank, 2u);
  ASSERT_EQ(back->counters.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back->counters[i].name, part.counters[i].name);
    EXPECT_EQ(back->counters[i].role, part.counters[i].role);
    EXPECT_EQ(back->counters[i].value, part.counters[i].value);
  }
  EXPECT_EQ(back->problems, part.problems);
  EXPECT_EQ(back->destination_done_ns, part.destination_done_ns);
  EXPECT_EQ(back->copy_first_busy_ns, part.copy_first_busy_ns);
  EXPECT_EQ(back->coverage.paths, part.coverage.paths);
  EXPECT_EQ(back->coverage.sent, part.coverage.sent);
  EXPECT_EQ(back->coverage.received, part.coverage.received);
}

// `edit` spoils one field of a good part; the decoder must refuse it, saying `why`.
void expect_refused(const std::function<void(nlohmann::json&)>& edit, const std::string& why) {
  nlohmann::json j = nlohmann::json::parse(encode_broadcast_rank_part(sample_part()));
  edit(j);
  Result<BroadcastRankPart> back = decode_broadcast_rank_part(j.dump(), 2, 8, 8);
  ASSERT_FALSE(back.is_ok()) << "accepted: " << j.dump();
  EXPECT_EQ(back.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(back.status().message().find("rank 2's part of the broadcast"), std::string::npos)
      << back.status().message();
  EXPECT_NE(back.status().message().find(why), std::string::npos) << back.status().message();
}

TEST(BroadcastRankPart, MalformedPartsAreRefusedNamingTheRankAndWhat) {
  expect_refused([](nlohmann::json& j) { j["rank"] = 1; }, "another rank's");
  expect_refused([](nlohmann::json& j) { j["destination_done_ns"][0][0] = 8; }, "past the plan's 8");
  expect_refused([](nlohmann::json& j) { j["copy_first_busy_ns"][1][0] = 0; }, "twice");
  expect_refused([](nlohmann::json& j) { j["problems"][0][0] = "fatal"; }, "unknown kind 'fatal'");
  expect_refused([](nlohmann::json& j) { j["problems"][0][1] = ""; }, "empty or too long");
  expect_refused([](nlohmann::json& j) { j["counters"][0][1] = "speed"; }, "unknown role");
  expect_refused([](nlohmann::json& j) { j["paths"].erase(0); }, "'paths' is not a list of");
  expect_refused([](nlohmann::json& j) { j["sent"][0] = -1; }, "is not a count");
  expect_refused([](nlohmann::json& j) { j.erase("received"); }, "received");
  Result<BroadcastRankPart> garbage = decode_broadcast_rank_part("{not json", 2, 8, 8);
  EXPECT_FALSE(garbage.is_ok());
}

}  // namespace
}  // namespace tensorwire::collectives
