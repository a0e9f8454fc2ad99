// The collective broadcast under the model checker: its own invariants
// (collectives::BroadcastInvariants, plugged in as a CollectiveObserver) are
// checked on every explored order, each planted collective bug is found with
// the strategy and bound named here, and a correct broadcast survives every
// order and every injected fault.
#include <gtest/gtest.h>

#include <string>

#include "core/coverage.h"
#include "core/protocols/realm_broadcast/planted_collective_bug.h"
#include "model/explorer.h"
#include "scenario/scenario_loader.h"
#include "core/protocols/realm_broadcast/realm_broadcast_protocol.h"

namespace tensorwire::model {
namespace {

using collectives::PlantedCollectiveBug;

// scenarios/model_broadcast.toml, inline so the test does not depend on the
// working directory: node0's host IB buffer feeds a local and a remote
// consumer through a ring of two chunks.
const char* kBroadcast = R"(
name = "model_broadcast"
seed = 5
[cluster]
nodes = 2
gpus_per_node = 2
gpu_direct = false
[workload]
kind = "broadcast"
bytes = "16KiB"
source = "node0/gpu0"
destinations = ["node0/gpu1", "node1/host"]
algorithm = "aggregation"
ib_buffer_size = "8KiB"
min_chunk = "4KiB"
max_chunk = "4KiB"
)";

Scenario broadcast(PlantedCollectiveBug bug = PlantedCollectiveBug::kNone) {
  Scenario s = load_scenario_string(kBroadcast, "model_broadcast.toml");
  collectives::options_of(s.protocol.options).planted_bug = bug;
  return s;
}

std::string problems_of(const CheckReport& r) {
  std::string out;
  if (r.counterexample) {
    out = problem_lines(r.counterexample->problems);
  }
  return out;
}

bool mentions(const Execution& e, const std::string& what) {
  return any_problem_mentions(e.problems, what);
}

TEST(BroadcastCheck, EveryOrderOfACorrectBroadcastKeepsItsInvariants) {
  CheckOptions o;
  o.strategy = CheckStrategy::kDfs;
  o.max_schedules = 100000;
  const CheckReport r = check(broadcast(), o);
  EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound) << problems_of(r);
  EXPECT_TRUE(r.exhausted);
  // Orders were really explored: far more than one schedule, with choices.
  EXPECT_GT(r.schedules, 100u);
  EXPECT_GT(r.choice_points, r.schedules);
}

struct CollectiveBugCase {
  PlantedCollectiveBug bug;
  CheckStrategy strategy;
  uint64_t max_schedules;
  const char* evidence;  // what the violated invariant says
};

class BroadcastBugs : public ::testing::TestWithParam<CollectiveBugCase> {};

TEST_P(BroadcastBugs, TheCheckerFindsThePlantedBugAndTheScheduleReplays) {
  const CollectiveBugCase& c = GetParam();
  CheckOptions o;
  o.strategy = c.strategy;
  o.max_schedules = c.max_schedules;
  const Scenario s = broadcast(c.bug);
  const CheckReport r = check(s, o);
  ASSERT_EQ(r.outcome, CheckOutcome::kSafety) << problems_of(r);
  ASSERT_TRUE(r.counterexample.has_value());
  EXPECT_TRUE(mentions(*r.counterexample, c.evidence)) << problems_of(r);
  // The recorded schedule reruns the same violation.
  ReplayStrategy replay(r.counterexample->choices);
  NullTraceSink trace;
  const Execution again = run_execution(model_scenario(s), o.seed, replay, trace);
  EXPECT_FALSE(again.diverged);
  EXPECT_EQ(again.outcome, CheckOutcome::kSafety);
  EXPECT_EQ(again.problems, r.counterexample->problems);
}

INSTANTIATE_TEST_SUITE_P(
    Collectives, BroadcastBugs,
    ::testing::Values(
        CollectiveBugCase{PlantedCollectiveBug::kMaxConsumerRead, CheckStrategy::kDfs, 1000, "overwrites"},
        CollectiveBugCase{PlantedCollectiveBug::kMaxConsumerRead, CheckStrategy::kRandom, 100, "overwrites"},
        CollectiveBugCase{PlantedCollectiveBug::kMaxConsumerRead, CheckStrategy::kPct, 100, "overwrites"},
        CollectiveBugCase{PlantedCollectiveBug::kFreeAtFirstConsumer, CheckStrategy::kDfs, 1000,
                          "freed while its consumer"},
        CollectiveBugCase{PlantedCollectiveBug::kFreeAtFirstConsumer, CheckStrategy::kRandom, 100,
                          "freed while its consumer"},
        CollectiveBugCase{PlantedCollectiveBug::kFreeAtFirstConsumer, CheckStrategy::kPct, 100,
                          "freed while its consumer"},
        // The DMA sanitizer names this one first: the ring is refilled while
        // the NIC still reads it (the bytes that arrive are right here).
        CollectiveBugCase{PlantedCollectiveBug::kReadReportedAtIssue, CheckStrategy::kDfs, 1000,
                          "written by copy"},
        CollectiveBugCase{PlantedCollectiveBug::kReadReportedAtIssue, CheckStrategy::kRandom, 100,
                          "written by copy"},
        CollectiveBugCase{PlantedCollectiveBug::kReadReportedAtIssue, CheckStrategy::kPct, 100,
                          "written by copy"}),
    [](const ::testing::TestParamInfo<CollectiveBugCase>& info) {
      return std::string(collectives::planted_collective_bug_name(info.param.bug)) + "_" +
             check_strategy_name(info.param.strategy);
    });

// read_reported_at_issue: the DMA sanitizer names the refill at the moment
// it races the write; the overwrite invariant sees it only once the producer
// passes what the consumer's finished chunks read, and no byte is wrong.
TEST(BroadcastCheck, ReadReportedAtIssueIsNamedFirstByTheDmaSanitizer) {
  CheckOptions o;
  o.strategy = CheckStrategy::kDfs;
  o.max_schedules = 1000;
  const CheckReport r = check(broadcast(PlantedCollectiveBug::kReadReportedAtIssue), o);
  ASSERT_TRUE(r.counterexample.has_value());
  const std::vector<Problem>& problems = r.counterexample->problems;
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems.front().text.rfind("DMA sanitizer: ", 0), 0u) << problems.front().text;
  for (const Problem& p : problems) {
    EXPECT_EQ(p.text.find("differ"), std::string::npos) << p.text;
  }
}

// A fault makes the broadcast fail with an error on the ranks it reaches (and,
// through ABORT, on the others); that is no violation, and no rank may be
// left waiting.
TEST(BroadcastCheck, FaultsEndInErrorsNotInBrokenInvariantsOrHangs) {
  for (FaultKind kind : {FaultKind::kQpError, FaultKind::kRegistrationFailure, FaultKind::kCrash}) {
    CheckOptions o;
    o.strategy = CheckStrategy::kRandom;
    o.max_schedules = 150;
    o.faults = {kind};
    const CheckReport r = check(broadcast(), o);
    EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound) << fault_kind_name(kind) << "\n" << problems_of(r);
    EXPECT_EQ(r.schedules, 150u);
  }
}

// scenarios/model_broadcast_tree.toml: three ranks, 0 feeding 1 and 2. A QP
// error between 0 and 1, or a crash, used to leave the third rank waiting for
// ever; now the rank that fails tells the others (ABORT) and each live rank
// ends with an error, which the fault excuses.
TEST(BroadcastCheck, TheTreeUnderFaultsLeavesNoRankWaiting) {
  const Scenario tree =
      load_scenario_file(std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_broadcast_tree.toml");
  ASSERT_EQ(tree.cluster.nodes, 3u);
  for (FaultKind kind : {FaultKind::kQpError, FaultKind::kCrash}) {
    CheckOptions o;
    o.strategy = CheckStrategy::kRandom;
    o.max_schedules = 300;
    o.faults = {kind};
    const CheckReport r = check(tree, o);
    EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound) << fault_kind_name(kind) << "\n" << problems_of(r);
    EXPECT_EQ(r.schedules, 300u);
    // The faults struck and the failure was passed on.
    EXPECT_GT(r.coverage.count_of(kCoveragePaths, "rank failed with an error"), 0u) << fault_kind_name(kind);
    EXPECT_GT(r.coverage.count_of(kCoverageMessagesReceived, "ABORT"), 0u) << fault_kind_name(kind);
  }
}

// What `check --swarm --strategy dfs --faults crash` shrank its finding to: a
// broadcast of 1 B from node0's host memory to itself. Rank 0 crashes before
// its local copy; its unfinished part is the crash's doing, and the end
// state it leaves (a destination short of its byte) is no safety violation.
const char* kLocalByte = R"(
name = "local_byte"
seed = 1
[cluster]
nodes = 2
gpus_per_node = 0
gpu_direct = false
[workload]
kind = "broadcast"
source = "node0/host"
algorithm = "naive"
bytes = 1
min_chunk = 256
max_chunk = 256
ib_buffer_size = 256
max_inflight_chunks = 1
destinations = ["node0/host"]
)";

TEST(BroadcastCheck, ACrashedRanksUnfinishedPartIsNoViolation) {
  const Scenario s = load_scenario_string(kLocalByte, "local_byte.toml");
  CheckOptions o;
  o.strategy = CheckStrategy::kDfs;
  o.max_schedules = 100;
  o.faults = {FaultKind::kCrash};
  const CheckReport r = check(s, o);
  EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound) << problems_of(r);
  EXPECT_TRUE(r.exhausted);
  EXPECT_GT(r.schedules, 1u) << "the crash was tried";
}

// The invariants are checked under faults too: a planted bug is still found
// while faults are on offer.
TEST(BroadcastCheck, APlantedBugIsFoundWithFaultsOnOffer) {
  CheckOptions o;
  o.strategy = CheckStrategy::kDfs;
  o.max_schedules = 1000;
  o.faults = {FaultKind::kQpError};
  const CheckReport r = check(broadcast(PlantedCollectiveBug::kFreeAtFirstConsumer), o);
  EXPECT_EQ(r.outcome, CheckOutcome::kSafety) << problems_of(r);
}

}  // namespace
}  // namespace tensorwire::model
