// The parts ranks exchange at the end of a verbs run: they survive the trip,
// merge into the simulator's shape, and a malformed or lying part is an error
// naming the rank, never a crash. No device needed.
#include "runner/rank_outcome.h"

#include <algorithm>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
    o.protocol = {{"tensor_requests", CounterRole::kControlMessage, 1 + r},
                  {"stale_messages", CounterRole::kProblem, 0}};
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
  ASSERT_EQ(m.protocol_counters.size(), 2u);
  ASSERT_EQ(m.protocol_counters[1].size(), 2u);
  EXPECT_EQ(m.protocol_counters[1][0].name, "tensor_requests");
  EXPECT_EQ(m.protocol_counters[1][0].role, CounterRole::kControlMessage);
  EXPECT_EQ(m.protocol_counters[1][0].value, 2u);
  EXPECT_EQ(m.protocol_counters[1][1].role, CounterRole::kProblem);
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
  EXPECT_NE(m.problems[0].text.find("rank 0: the workload did not finish"), std::string::npos);
  EXPECT_EQ(m.problems[0].kind, ProblemKind::kLiveness);
  EXPECT_FALSE(m.measured_step_ns[0].has_value());
}

// issue 18 #11: a rank's own problem that already names the rank keeps one
// "rank R: " prefix, not "rank 0: rank 0: ".
TEST(RankOutcome, ARanksOwnProblemsNameTheRankOnce) {
  RankOutcome r0 = rank_outcome_of(0, one_step(0), {1});
  r0.problems = {transport_problem("rank 0: the protocol could not start: no memory", 0),
                 liveness_problem("2 protocol requests still pending at the end", 0),
                 transport_problem("rank 01: a different prefix", 0)};
  RankOutcome r1 = rank_outcome_of(1, one_step(1), {1});
  r1.problems = {transport_problem("rank 0: what rank 1 saw of rank 0", 1)};
  MergedRun m = merge_rank_outcomes({r0, r1}, true);
  std::vector<std::string> texts;
  for (const Problem& p : m.problems) texts.push_back(p.text);
  const std::vector<std::string> expected{
      "rank 0: the protocol could not start: no memory",
      "rank 0: 2 protocol requests still pending at the end",
      "rank 0: rank 01: a different prefix",
      "rank 1: rank 0: what rank 1 saw of rank 0"};
  for (const std::string& e : expected) {
    EXPECT_NE(std::find(texts.begin(), texts.end(), e), texts.end()) << e;
  }
  for (const std::string& t : texts) EXPECT_EQ(t.find("rank 0: rank 0: "), std::string::npos) << t;
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
  // Protocol counters that are not [name, role, value].
  for (const std::string& counters :
       {std::string("{}"), std::string("[[\"a\", \"nonsense_role\", 1]]"),
        std::string("[[\"a\", \"other\", -1]]"), std::string("[[\"\", \"other\", 1]]"),
        std::string("[[\"a\", \"other\"]]")}) {
    std::string t = encode_rank_outcome(o);
    const size_t p = t.find("\"protocol\":[]");
    ASSERT_NE(p, std::string::npos) << t;
    t.replace(p, 13, "\"protocol\":" + counters);
    Result<RankOutcome> r = decode_rank_outcome(t, 1);
    ASSERT_FALSE(r.is_ok()) << counters;
    EXPECT_NE(r.status().message().find("rank 1"), std::string::npos);
  }
  // A rank reporting a transfer that another rank receives.
  RankOutcome liar = rank_outcome_of(0, one_step(0), {1});
  liar.steps[0].recvs[0].second.dst = 1;
  MergedRun m = merge_rank_outcomes({liar, rank_outcome_of(1, one_step(1), {1})}, true);
  EXPECT_FALSE(m.problems.empty());
}

// A traced part: its events and its clock travel, and merging puts every
// rank on one line: exactly on one host, by the set-up barrier across hosts.
TEST(RankOutcome, TracesTravelAndMergeOntoOneTimeLine) {
  RankOutcome a = rank_outcome_of(0, one_step(0), {1});
  a.trace = {TraceEvent{"node0/nic tx to node1", "send", "rank 0 -> rank 1, 51 bytes", 1'000, 400,
                        false},
             TraceEvent{"rank 0/progress", "trace truncated", "", 2'000, 0, true}};
  a.trace_clock = TraceClock{"boot-1", 50'000, 900};
  RankOutcome b = rank_outcome_of(1, one_step(1), {1});
  b.trace = {TraceEvent{"node1/nic rx from node0", "recv", "rank 0 -> rank 1, 51 bytes", 300, 0,
                        true}};
  b.trace_clock = TraceClock{"boot-1", 50'900, 100};

  Result<RankOutcome> back = decode_rank_outcome(encode_rank_outcome(a), 0);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back->trace.size(), 2u);
  EXPECT_EQ(back->trace[0].track, "node0/nic tx to node1");
  EXPECT_EQ(back->trace[0].detail, "rank 0 -> rank 1, 51 bytes");
  EXPECT_EQ(back->trace[0].duration_ns, 400);
  EXPECT_FALSE(back->trace[0].instant);
  EXPECT_TRUE(back->trace[1].instant);
  EXPECT_EQ(back->trace_clock.domain, "boot-1");
  EXPECT_EQ(back->trace_clock.origin_ns, 50'000);
  EXPECT_EQ(back->trace_clock.aligned_at_ns, 900);

  // One host: rank 1's 300 is CLOCK_MONOTONIC 51,200; rank 0's 1,000 is
  // 51,000, the earliest, so 0.
  TraceRecording one_host;
  EXPECT_NE(merge_rank_traces({a, b}, one_host).find("one host"), std::string::npos);
  ASSERT_EQ(one_host.events().size(), 3u);
  EXPECT_EQ(one_host.events()[0].start_ns, 0);
  EXPECT_EQ(one_host.events()[0].duration_ns, 400);
  EXPECT_EQ(one_host.events()[1].start_ns, 1'000);
  EXPECT_EQ(one_host.events()[2].start_ns, 200);

  // Two hosts: each rank's barrier exit is the same instant: rank 0's 1,000
  // is +100 after it, rank 1's 300 is +200; rank 0's event is the earliest.
  b.trace_clock.domain = "boot-2";
  TraceRecording two_hosts;
  EXPECT_NE(merge_rank_traces({a, b}, two_hosts).find("set-up barrier"), std::string::npos);
  ASSERT_EQ(two_hosts.events().size(), 3u);
  EXPECT_EQ(two_hosts.events()[0].start_ns, 0);
  EXPECT_EQ(two_hosts.events()[2].start_ns, 100);

  // No domain known: never taken as one host.
  a.trace_clock.domain.clear();
  b.trace_clock.domain.clear();
  TraceRecording unknown;
  EXPECT_NE(merge_rank_traces({a, b}, unknown).find("set-up barrier"), std::string::npos);
}

TEST(RankOutcome, AMalformedTraceEventIsAnErrorNamingTheRank) {
  RankOutcome o = rank_outcome_of(1, one_step(1), {1});
  o.trace = {TraceEvent{"rank 1/recv", "a", "", 10, 5, false}};
  nlohmann::json good = nlohmann::json::parse(encode_rank_outcome(o));
  for (const nlohmann::json& bad_event :
       {nlohmann::json::array({"rank 1/recv", "a", 10, 5}),
        nlohmann::json::array({"rank 1/recv", "a", 10, -2, ""}),
        nlohmann::json::array({"rank 1/recv", 7, 10, 5, ""}), nlohmann::json("slice")}) {
    nlohmann::json bad = good;
    bad["trace"][0] = bad_event;
    Result<RankOutcome> r = decode_rank_outcome(bad.dump(), 1);
    ASSERT_FALSE(r.is_ok()) << bad_event.dump();
    EXPECT_EQ(r.status().code(), StatusCode::kMalformedMessage);
    EXPECT_NE(r.status().message().find("rank 1"), std::string::npos) << r.status().message();
  }
  nlohmann::json no_clock = good;
  no_clock.erase("trace_clock");
  EXPECT_FALSE(decode_rank_outcome(no_clock.dump(), 1).is_ok());
}

// A recording keeps what it is told up to its bound and counts the rest;
// replaying it moves every event by the shift.
TEST(TraceRecording, KeepsUpToItsBoundAndReplaysShifted) {
  TraceRecording r(2);
  r.slice("node0/nic tx to node1", "send", 10, 5, "a");
  r.instant("rank 0/progress", "x", 20, "b");
  r.slice("node0/nic tx to node1", "send", 30, 5, "c");
  ASSERT_EQ(r.events().size(), 2u);
  EXPECT_EQ(r.dropped(), 1u);
  TraceRecording copy;
  replay_trace_events(r.events(), 100, copy);
  ASSERT_EQ(copy.events().size(), 2u);
  EXPECT_EQ(copy.events()[0].start_ns, 110);
  EXPECT_EQ(copy.events()[0].duration_ns, 5);
  EXPECT_EQ(copy.events()[0].detail, "a");
  EXPECT_EQ(copy.events()[1].start_ns, 120);
  EXPECT_TRUE(copy.events()[1].instant);
}

}  // namespace
}  // namespace tensorwire
