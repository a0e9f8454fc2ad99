// The bug zoo: each planted bug (tf_verbs::PlantedBug) is found by the model
// checker with the strategy and bound named here, and the same search finds
// nothing with no bug planted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/counterexample_shrinker.h"
#include "model/explorer.h"
#include "scenario/scenario_loader.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_protocol.h"

namespace tensorwire::model {
namespace {

using tf_verbs::PlantedBug;

// Two ranks; "a" grows at step 2 (a meta-data change: update, re-request), "b"
// keeps its shape (so step 2 writes it directly, zero-copy), both from host to
// host; "g" lands on a GPU the NIC cannot reach (the host-proxy path).
const char* kZooScenario = R"(
name = "zoo"
[cluster]
nodes = 2
gpus_per_node = 1
gpu_direct = false
[workload]
kind = "tensors"
steps = 2
[[workload.tensor]]
name = "a"
src = 0
dst = 1
shape = [16]
[[workload.tensor]]
name = "b"
src = 0
dst = 1
shape = [32]
[[workload.tensor]]
name = "g"
src = 0
dst = 1
shape = [8]
dst_memory = "gpu0"
[[workload.change]]
step = 2
tensor = "a"
shape = [64]
)";

struct ZooCase {
  PlantedBug bug;
  CheckStrategy strategy;
  uint64_t max_schedules;
  // The shrunk counterexample is at most this (events, deviations, faults,
  // choice points), in ScheduleSize's order: measured, so that a shrinker
  // that does worse fails.
  ScheduleSize shrunk;
};

class BugZoo : public ::testing::TestWithParam<ZooCase> {};

TEST_P(BugZoo, TheCheckerFindsThePlantedBug) {
  const ZooCase& c = GetParam();
  Scenario s = load_scenario_string(kZooScenario, "zoo.toml");
  tf_verbs::options_of(s.protocol.options).planted_bug = c.bug;
  CheckOptions o;
  o.strategy = c.strategy;
  o.max_schedules = c.max_schedules;
  o.seed = 3;
  CheckReport r = check(s, o);
  ASSERT_NE(r.outcome, CheckOutcome::kNothingFound)
      << tf_verbs::planted_bug_name(c.bug) << ": " << r.schedules << " schedules";
  ASSERT_TRUE(r.counterexample);
  EXPECT_FALSE(r.counterexample->problems.empty());
  // The counterexample replays to the same outcome.
  ReplayStrategy replay(r.counterexample->choices);
  NullTraceSink trace;
  Execution again = run_execution(model_scenario(s), o.seed, replay, trace);
  EXPECT_FALSE(again.diverged);
  EXPECT_EQ(again.outcome, r.outcome);
  EXPECT_EQ(again.problems, r.counterexample->problems);
}

TEST_P(BugZoo, TheCounterexampleShrinksAndReplaysToTheSameCheck) {
  const ZooCase& c = GetParam();
  Scenario s = load_scenario_string(kZooScenario, "zoo.toml");
  tf_verbs::options_of(s.protocol.options).planted_bug = c.bug;
  CheckOptions o;
  o.strategy = c.strategy;
  o.max_schedules = c.max_schedules;
  o.seed = 3;
  CheckReport r = check(s, o);
  ASSERT_TRUE(r.counterexample) << tf_verbs::planted_bug_name(c.bug);
  const Scenario checked = model_scenario(s);
  const ShrinkResult shrunk =
      shrink_counterexample(checked, o.seed, FaultOffer{r.counterexample_faults, 1, {}}, *r.counterexample);
  const ScheduleSize& n = shrunk.size;
  EXPECT_LE(shrunk.size, shrunk.original_size);
  EXPECT_LE(shrunk.size, c.shrunk)
      << n.events << " events, " << n.deviations << " deviations, " << n.faults << " faults, "
      << n.choice_points << " choice points";
  EXPECT_LE(shrunk.replays, ShrinkOptions{}.max_replays);
  // The shrunk schedule replays exactly, to the same outcome and check.
  ReplayStrategy replay(shrunk.execution.choices);
  NullTraceSink trace;
  Execution again = run_execution(checked, o.seed, replay, trace, nullptr, FaultOffer{r.counterexample_faults, 1, {}});
  EXPECT_FALSE(again.diverged);
  EXPECT_EQ(again.outcome, r.outcome);
  EXPECT_EQ(violated_check(again), violated_check(*r.counterexample));
  EXPECT_EQ(again.events, n.events);
}

TEST_P(BugZoo, TheSameSearchFindsNothingWithoutTheBug) {
  const ZooCase& c = GetParam();
  Scenario s = load_scenario_string(kZooScenario, "zoo.toml");
  CheckOptions o;
  o.strategy = c.strategy;
  o.max_schedules = c.max_schedules;
  o.seed = 3;
  CheckReport r = check(s, o);
  EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound)
      << (r.counterexample && !r.counterexample->problems.empty() ? problem_line(r.counterexample->problems[0]) : "");
}

INSTANTIATE_TEST_SUITE_P(
    Planted, BugZoo,
    ::testing::Values(ZooCase{PlantedBug::kStaleReRequestAddress, CheckStrategy::kRandom, 50, {231, 0, 0, 129}},
                      ZooCase{PlantedBug::kSkipClone, CheckStrategy::kRandom, 200, {102, 0, 0, 67}},
                      ZooCase{PlantedBug::kReuseRequestIndex, CheckStrategy::kRandom, 200, {25, 0, 0, 16}},
                      ZooCase{PlantedBug::kFreeProxyBeforeCopy, CheckStrategy::kDfs, 50, {104, 0, 0, 66}},
                      ZooCase{PlantedBug::kNoReallocOnSizeChange, CheckStrategy::kDfs, 50, {231, 0, 0, 129}},
                      ZooCase{PlantedBug::kDestroyResponseEarly, CheckStrategy::kPct, 100, {104, 4, 0, 65}},
                      ZooCase{PlantedBug::kUnregisteredSource, CheckStrategy::kDfs, 50, {155, 0, 0, 57}},
                      ZooCase{PlantedBug::kSendDoneBeforeWrite, CheckStrategy::kDfs, 50, {104, 0, 0, 67}},
                      ZooCase{PlantedBug::kDeregisterSourceEarly, CheckStrategy::kDfs, 50, {155, 0, 0, 57}},
                      ZooCase{PlantedBug::kPoolOverlap, CheckStrategy::kDfs, 50, {104, 0, 0, 66}}),
    [](const auto& info) { return std::string(tf_verbs::planted_bug_name(info.param.bug)); });

// The bugs the DMA sanitizer names at the moment they happen: the caller
// overwriting a source the NIC still reads, a source deregistered under its
// write, the pool handing a destination still in use to a second request (the
// receiver then reads one tensor while the other's write still lands there).
// Other checks see only some consequence, in some orders (wrong bytes, a hang
// after a protection error); the counterexample's first problem is the
// sanitizer's, names both operations, and replays from the schedule's choices.
struct SanitizerCase {
  PlantedBug bug;
  RankId rank;  // where the memory is
  std::vector<std::string> words;
};

TEST(BugZooSanitizer, TheDmaSanitizerNamesTheseFirstAndTheyReplay) {
  const std::vector<SanitizerCase> cases = {
      {PlantedBug::kSendDoneBeforeWrite, 0,
       {"written by the CPU", "while RDMA write with immediate wr", "still reads it"}},
      {PlantedBug::kDeregisterSourceEarly, 0,
       {"deregistered", "while RDMA write with immediate wr", "still reads it"}},
      {PlantedBug::kPoolOverlap, 1,
       {"read by the CPU", "while RDMA write with immediate wr", "still writes it"}},
  };
  for (const SanitizerCase& c : cases) {
    Scenario s = load_scenario_string(kZooScenario, "zoo.toml");
    tf_verbs::options_of(s.protocol.options).planted_bug = c.bug;
    CheckOptions o;
    o.strategy = CheckStrategy::kDfs;
    o.max_schedules = 50;
    CheckReport r = check(s, o);
    ASSERT_EQ(r.outcome, CheckOutcome::kSafety) << tf_verbs::planted_bug_name(c.bug);
    ASSERT_TRUE(r.counterexample);
    ASSERT_FALSE(r.counterexample->problems.empty());
    const Problem& first = r.counterexample->problems[0];
    EXPECT_EQ(first.kind, ProblemKind::kSafety);
    EXPECT_EQ(first.rank, c.rank);
    EXPECT_EQ(first.peer, RankId{1} - c.rank);
    const std::string where = "DMA sanitizer: rank " + std::to_string(c.rank) + ": buffer 0x";
    EXPECT_NE(first.text.find(where), std::string::npos) << problem_line(first);
    for (const std::string& words : c.words) {
      EXPECT_NE(first.text.find(words), std::string::npos) << problem_line(first);
    }
    ReplayStrategy replay(r.counterexample->choices);
    NullTraceSink trace;
    Execution again = run_execution(model_scenario(s), o.seed, replay, trace);
    EXPECT_FALSE(again.diverged);
    EXPECT_EQ(again.outcome, CheckOutcome::kSafety);
    EXPECT_EQ(again.problems, r.counterexample->problems);
  }
}

// When the stale address is still registered (the old, larger buffer went back
// to the pool), the write lands: the write-destination invariant names it
// before the content check sees its consequence.
TEST(BugZooInvariants, AStaleWriteThatLandsIsNamedByTheDestinationInvariant) {
  Scenario s = load_scenario_string(R"(
name = "shrink"
[cluster]
nodes = 2
[workload]
kind = "tensors"
steps = 2
[[workload.tensor]]
name = "a"
src = 0
dst = 1
shape = [65536]
[[workload.change]]
step = 2
tensor = "a"
shape = [1024]
)", "shrink.toml");
  tf_verbs::options_of(s.protocol.options).planted_bug = PlantedBug::kStaleReRequestAddress;
  CheckOptions o;
  o.strategy = CheckStrategy::kDfs;
  o.max_schedules = 10;
  CheckReport r = check(s, o);
  ASSERT_EQ(r.outcome, CheckOutcome::kSafety);
  ASSERT_FALSE(r.counterexample->problems.empty());
  EXPECT_NE(r.counterexample->problems[0].text.find("lands outside that request's destination"),
            std::string::npos)
      << problem_line(r.counterexample->problems[0]);
  // Without the bug, the same scenario passes.
  tf_verbs::options_of(s.protocol.options).planted_bug = PlantedBug::kNone;
  EXPECT_EQ(check(s, o).outcome, CheckOutcome::kNothingFound);
}

// ignore_proto_size needs what the zoo scenario above lacks: a string tensor
// whose string size changes while its shape does not. The sender then writes
// the larger proto into the receiver's old proto buffer.
TEST(BugZooStrings, AStringSizeChangeTheSenderMissesIsFound) {
  Scenario s = load_scenario_string(R"(
name = "strings"
[cluster]
nodes = 2
[workload]
kind = "tensors"
steps = 2
[[workload.tensor]]
name = "s"
src = 0
dst = 1
dtype = "string"
shape = [4]
string_bytes = 8
[[workload.change]]
step = 2
tensor = "s"
string_bytes = 40
)", "strings.toml");
  CheckOptions o;
  o.strategy = CheckStrategy::kRandom;
  o.max_schedules = 50;
  EXPECT_EQ(check(s, o).outcome, CheckOutcome::kNothingFound);
  tf_verbs::options_of(s.protocol.options).planted_bug = PlantedBug::kIgnoreProtoSize;
  const CheckReport r = check(s, o);
  ASSERT_EQ(r.outcome, CheckOutcome::kSafety);
  ASSERT_FALSE(r.counterexample->problems.empty());
  // Without the size change the bug has nothing to miss.
  Scenario same = load_scenario_string(R"(
name = "same"
[cluster]
nodes = 2
[workload]
kind = "tensors"
steps = 2
[[workload.tensor]]
name = "s"
src = 0
dst = 1
dtype = "string"
shape = [4]
)", "same.toml");
  tf_verbs::options_of(same.protocol.options).planted_bug = PlantedBug::kIgnoreProtoSize;
  EXPECT_EQ(check(same, o).outcome, CheckOutcome::kNothingFound);
}

}  // namespace
}  // namespace tensorwire::model
