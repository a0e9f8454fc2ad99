// Counterexample shrinking: the shrunk schedule replays exactly to the same
// outcome and the same violated check, is never larger than the original,
// strictly smaller for a random walk's long counterexample, stays within its
// replay budget, and is the same every time.
#include "model/counterexample_shrinker.h"

#include <gtest/gtest.h>

#include <string>

#include "core/protocols/tf_verbs_zero_copy/tf_verbs_protocol.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::model {
namespace {

using tf_verbs::PlantedBug;

// scenarios/model_2x3.toml (the bug zoo's): two ranks, three tensors, one
// of which grows at step 2 and one of which lands on a GPU the NIC cannot
// reach: enough same-time events for a random walk to make many needless
// deviations, and one bug (destroy_response_early) that needs some.
const std::string kScenario = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_2x3.toml";

struct Found {
  Scenario scenario;  // model_scenario()'d, with the bug planted
  CheckOptions options;
  CheckReport report;
};

Found find_bug(PlantedBug bug, CheckStrategy strategy, std::vector<FaultKind> faults = {},
               uint64_t seed = 5) {
  Found f;
  Scenario s = load_scenario_file(kScenario);
  tf_verbs::options_of(s.protocol.options).planted_bug = bug;
  f.options.strategy = strategy;
  f.options.max_schedules = 300;
  f.options.seed = seed;
  f.options.faults = std::move(faults);
  f.report = check(s, f.options);
  f.scenario = model_scenario(s);
  return f;
}

ShrinkResult shrink(const Found& f, uint64_t max_replays = 400) {
  ShrinkOptions o;
  o.max_replays = max_replays;
  return shrink_counterexample(f.scenario, f.options.seed, FaultOffer{f.report.counterexample_faults, 1, {}},
                               *f.report.counterexample, o);
}

// The shrunk schedule, replayed strictly, gives the same outcome and check.
void expect_replays(const Found& f, const ShrinkResult& r) {
  ReplayStrategy replay(r.execution.choices);
  NullTraceSink none;
  const Execution again =
      run_execution(f.scenario, f.options.seed, replay, none, nullptr,
                    FaultOffer{f.report.counterexample_faults, 1, {}});
  EXPECT_FALSE(again.diverged);
  EXPECT_EQ(again.outcome, f.report.outcome);
  EXPECT_EQ(violated_check(again), violated_check(*f.report.counterexample));
  EXPECT_EQ(again.problems, r.execution.problems);
  EXPECT_EQ(again.events, r.size.events);
}

TEST(CounterexampleShrinker, ARandomWalksCounterexampleShrinksStrictlyAndReplays) {
  const Found f = find_bug(PlantedBug::kStaleReRequestAddress, CheckStrategy::kRandom);
  ASSERT_EQ(f.report.outcome, CheckOutcome::kSafety);
  const ShrinkResult r = shrink(f);
  EXPECT_TRUE(r.reproduced);
  EXPECT_FALSE(r.check.empty());
  EXPECT_EQ(r.check, violated_check(*f.report.counterexample));
  EXPECT_EQ(r.original_size.choice_points, f.report.counterexample->choices.size());
  EXPECT_LT(r.size, r.original_size);
  EXPECT_LT(r.size.deviations, r.original_size.deviations);
  EXPECT_GT(r.replays, 1u);
  EXPECT_LE(r.replays, 400u);
  expect_replays(f, r);
}

TEST(CounterexampleShrinker, IsNeverLargerAndAlwaysReplays) {
  for (PlantedBug bug : {PlantedBug::kSkipClone, PlantedBug::kReuseRequestIndex,
                         PlantedBug::kSendDoneBeforeWrite, PlantedBug::kPoolOverlap}) {
    for (CheckStrategy strategy : {CheckStrategy::kRandom, CheckStrategy::kDfs}) {
      const Found f = find_bug(bug, strategy);
      if (!f.report.counterexample) continue;  // this strategy's bound missed it
      SCOPED_TRACE(std::string(tf_verbs::planted_bug_name(bug)) + " " + check_strategy_name(strategy));
      const ShrinkResult r = shrink(f, 120);
      EXPECT_TRUE(r.reproduced);
      EXPECT_LE(r.size, r.original_size);
      EXPECT_LE(r.replays, 120u);
      expect_replays(f, r);
    }
  }
}

TEST(CounterexampleShrinker, IsDeterministic) {
  const Found f = find_bug(PlantedBug::kDestroyResponseEarly, CheckStrategy::kRandom);
  ASSERT_TRUE(f.report.counterexample);
  const ShrinkResult a = shrink(f, 150);
  const ShrinkResult b = shrink(f, 150);
  EXPECT_EQ(a.execution.choices, b.execution.choices);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.replays, b.replays);
}

// Seed 8's walk finds destroy_response_early in an order that needs
// deviations from the default one (seed 5's walk, since a QP's flush is one
// event, shrinks to the default order itself, in 2 replays).
constexpr uint64_t kSeedNeedingDeviations = 8;

// A bug that needs deviations from the default order: ddmin leaves a
// schedule none of whose deviations can go (1-minimal).
TEST(CounterexampleShrinker, LeavesNoDeviationThatCanGo) {
  const Found f = find_bug(PlantedBug::kDestroyResponseEarly, CheckStrategy::kRandom, {},
                           kSeedNeedingDeviations);
  ASSERT_TRUE(f.report.counterexample);
  const ShrinkResult r = shrink(f);
  ASSERT_LT(r.replays, 400u);  // finished, not stopped by the budget
  EXPECT_GT(r.size.deviations, 0u);
  EXPECT_LT(r.size.deviations, r.original_size.deviations);
  expect_replays(f, r);
  for (size_t i = 0; i < r.execution.choices.size(); ++i) {
    if (r.execution.choices[i] == 0) continue;
    std::vector<uint32_t> edited = r.execution.choices;
    edited[i] = 0;
    ReplayStrategy replay(edited);  // past a changed point: the default, which is what we want
    NullTraceSink none;
    const Execution e = run_execution(f.scenario, f.options.seed, replay, none, nullptr,
                                      FaultOffer{f.report.counterexample_faults, 1, {}});
    uint64_t deviations = 0;
    for (uint32_t c : e.choices) deviations += c != 0;
    const ScheduleSize size{e.events, deviations, e.faults_injected, e.choices.size()};
    EXPECT_FALSE(e.outcome == r.execution.outcome && violated_check(e) == r.check && size < r.size)
        << "the deviation at " << i << " could go";
  }
}

TEST(CounterexampleShrinker, StopsAtItsReplayBudget) {
  const Found f = find_bug(PlantedBug::kDestroyResponseEarly, CheckStrategy::kRandom, {},
                           kSeedNeedingDeviations);
  ASSERT_TRUE(f.report.counterexample);
  const ShrinkResult full = shrink(f);
  ASSERT_GT(full.replays, 3u);
  const ShrinkResult r = shrink(f, 3);
  EXPECT_EQ(r.replays, 3u);
  EXPECT_LE(r.size, r.original_size);
  EXPECT_LE(full.size, r.size);
  expect_replays(f, r);
  // No budget: the original, untouched.
  const ShrinkResult none = shrink(f, 0);
  EXPECT_EQ(none.replays, 0u);
  EXPECT_EQ(none.execution.choices, f.report.counterexample->choices);
}

// A registration failure injected at the last event, after the bug struck,
// changes nothing the run checks: it is a deviation (and a fault) to drop.
TEST(CounterexampleShrinker, DropsAFaultTheViolationDoesNotNeed) {
  Found f = find_bug(PlantedBug::kSkipClone, CheckStrategy::kDfs);
  ASSERT_EQ(f.report.outcome, CheckOutcome::kSafety);
  const FaultOffer offer{{FaultKind::kRegistrationFailure}, 1, {}};
  NullTraceSink none;
  ReplayStrategy defaults({});
  const Execution plain = run_execution(f.scenario, f.options.seed, defaults, none, nullptr, offer);
  ASSERT_FALSE(plain.choices.empty());
  // With a fault on offer every event is a choice point; the fault is the
  // last alternative.
  std::vector<uint32_t> late = plain.choices;
  late.back() = plain.widths.back() - 1;
  ReplayStrategy replay(late);
  f.report.counterexample = run_execution(f.scenario, f.options.seed, replay, none, nullptr, offer);
  f.report.counterexample_faults = offer.kinds;
  ASSERT_TRUE(f.report.counterexample->fault_injected());
  ASSERT_EQ(violated_check(*f.report.counterexample), violated_check(plain));
  const ShrinkResult r = shrink(f);
  EXPECT_EQ(r.original_size.faults, 1u);
  EXPECT_EQ(r.size.faults, 0u);
  EXPECT_LT(r.size.deviations, r.original_size.deviations);
  EXPECT_FALSE(r.execution.fault_injected());
  expect_replays(f, r);
}

// scenarios/model_broadcast.toml: a collective protocol's counterexample
// shrinks the same way (the shrinker knows nothing of the protocol).
const std::string kBroadcast = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_broadcast.toml";

TEST(CounterexampleShrinker, ShrinksABroadcastsCounterexampleToo) {
  Found f;
  Scenario s = load_scenario_file(kBroadcast);
  ASSERT_TRUE(s.protocol.descriptor().plant_bug(s.protocol.options, "free_at_first_consumer"));
  f.options.strategy = CheckStrategy::kRandom;
  f.options.max_schedules = 200;
  f.options.seed = 5;
  f.options.faults = {FaultKind::kCrash};
  f.report = check(s, f.options);
  f.scenario = model_scenario(s);
  ASSERT_EQ(f.report.outcome, CheckOutcome::kSafety);
  const ShrinkResult r = shrink(f);
  EXPECT_TRUE(r.reproduced);
  EXPECT_LT(r.size, r.original_size);
  EXPECT_LT(r.size.deviations, r.original_size.deviations);
  expect_replays(f, r);
}

TEST(ViolatedCheck, IsTheFirstUnexcusedProblemWithoutItsNumbers) {
  Execution e;
  e.problems = {transport_problem("step 2 'a' 0->1: Recv failed: flushed", 1, 0),
                safety_problem("DMA sanitizer: rank 1: buffer 0x7f3a0 (64 bytes) raced by wr 12")};
  e.excused = {e.problems[0]};
  EXPECT_EQ(violated_check(e), "safety: DMA sanitizer: rank #: buffer # (# bytes) raced by wr #");
  e.excused.clear();
  EXPECT_EQ(violated_check(e), "transport: step # 'a' #->#: Recv failed: flushed");
  Execution other = e;
  other.problems[0].text = "step 1 'a' 1->0: Recv failed: flushed";
  EXPECT_EQ(violated_check(other), violated_check(e));
  other.problems[0].text = "step 1 'b' 1->0: Recv failed: flushed";
  EXPECT_NE(violated_check(other), violated_check(e));
  EXPECT_EQ(violated_check(Execution{}), "");
}

}  // namespace
}  // namespace tensorwire::model
