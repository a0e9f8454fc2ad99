// The parts ranks exchange at the end of a verbs run: they survive the trip,
// merge into the simulator's shape, and a malformed or lying part is an error
// naming the rank, never a crash. No device needed.
#include "runner/rank_outcome.h"

#include <gtest/gtest.h>

namespace tensorwire {
namespace {

TransferResult transfer(const std::string& name, RankId src, RankId dst, bool ok = true) {
  TransferResult t;
  t.step_id = 1;
  t.phase = "tensors";
  t.name = name;
  t.src = src;
  t.dst = dst;
  t.bytes = 64;
  t.recv_called_ns = 10;
  t.done_ns = 110;
  t.done = true;
  t.verified = ok;
  if (!ok) t.status = Status(StatusCode::kPeerGone, "rank 0 left");
  return t;
}

// What a driver playing `rank` of a two-transfer step holds.
WorkloadResult one_step(RankId rank) {
  WorkloadResult w;
  StepResult s;
  s.step_id = 1;
  s.start_ns = 5;
  s.end_ns = 205;
  s.transfers = {transfer("a", 0, 1), transfer("b", 1, 0)};
  for (TransferResult& t : s.transfers) {
    if (t.dst == rank) continue;
    TransferResult unplayed;  // another process's Recv: only its names are known here
    unplayed.step_id = 1;
    unplayed.phase = "tensors";
    unplayed.name = t.name;
    unplayed.src = t.src;
    unplayed.dst = t.dst;
    t = unplayed;
  }
  w.steps.push_back(s);
  w.finished = true;
  return w;
}

TEST(RankOutcome, RoundTripsAndMergesIntoEveryTransferOfTheStep) {
  std::vector<RankOutcome> parts;
  for (RankId r = 0; r < 2; ++r) {
    RankOutcome o = rank_outcome_of(r, one_step(r), {100});
    o.protocol.tensor_requests_sent = 1;
    o.transport.sends = 2;
    Result<RankOutcome> back = decode_rank_outcome(encode_rank_outcome(o), r);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    parts.push_back(*back);
  }
  MergedRun m = merge_rank_outcomes(parts, true);
  EXPECT_TRUE(m.problems.empty()) << m.problems.front();
  ASSERT_EQ(m.workload.steps.size(), 1u);
  ASSERT_EQ(m.workload.steps[0].transfers.size(), 2u);
  EXPECT_EQ(m.workload.steps[0].transfers[0].name, "a");
  EXPECT_TRUE(m.workload.steps[0].transfers[1].done);
  EXPECT_EQ(m.step_wire_bytes, std::vector<uint64_t>{200});
  EXPECT_EQ(m.measured_step_ns[0], 200);
  EXPECT_EQ(m.measured_transfer_ns[0][1], 100);
  EXPECT_EQ(m.protocol_stats.size(), 2u);
  EXPECT_EQ(m.rank_stats[1].sends, 2u);
}

TEST(RankOutcome, AFailedRecvAndAnUnfinishedRankBecomeProblems) {
  RankOutcome r0 = rank_outcome_of(0, one_step(0), {});
  r0.finished = false;
  r0.stop_reason = "ABORTED: the barrier failed";
  r0.steps[0].recvs[0].second.status = Status(StatusCode::kQpError, "flushed");
  MergedRun m = merge_rank_outcomes({r0}, false);
  EXPECT_FALSE(m.workload.finished);
  EXPECT_EQ(m.workload.recvs_failed, 1u);
  ASSERT_FALSE(m.problems.empty());
  EXPECT_NE(m.problems[0].find("rank 0: the workload did not finish"), std::string::npos);
  EXPECT_FALSE(m.measured_step_ns[0].has_value());
}

TEST(RankOutcome, MalformedOrLyingPartsAreErrorsNamingTheRank) {
  for (const std::string& bad : {std::string(""), std::string("{"), std::string("[1,2]"),
                                 std::string("{\"rank\": 1}"), std::string("\xff\xfe")}) {
    Result<RankOutcome> r = decode_rank_outcome(bad, 1);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kMalformedMessage);
    EXPECT_NE(r.status().message().find("rank 1"), std::string::npos);
  }
  RankOutcome o = rank_outcome_of(1, one_step(1), {1});
  Result<RankOutcome> wrong = decode_rank_outcome(encode_rank_outcome(o), 2);
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("say they are rank 1"), std::string::npos);
  std::string text = encode_rank_outcome(o);
  const size_t at = text.find("\"code\":0");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 8, "\"code\":99");
  EXPECT_FALSE(decode_rank_outcome(text, 1).is_ok());
  // A rank reporting a transfer that another rank receives.
  RankOutcome liar = rank_outcome_of(0, one_step(0), {1});
  liar.steps[0].recvs[0].second.dst = 1;
  MergedRun m = merge_rank_outcomes({liar, rank_outcome_of(1, one_step(1), {1})}, true);
  EXPECT_FALSE(m.problems.empty());
}

}  // namespace
}  // namespace tensorwire
