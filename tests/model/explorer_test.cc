// The explorer: executions are pure functions of (scenario, seed, schedule),
// dfs explores a tiny scenario to the end, and a broken run is classified.
#include "model/explorer.h"

#include <gtest/gtest.h>

#include "scenario/scenario_loader.h"

namespace tensorwire::model {
namespace {

// Two ranks, one tensor each way, two steps.
const char* kTiny = R"(
name = "tiny"
[cluster]
nodes = 2
[workload]
kind = "tensors"
steps = 2
[[workload.tensor]]
name = "a"
src = 0
dst = 1
shape = [4]
)";

Scenario tiny() { return load_scenario_string(kTiny, "tiny.toml"); }

TEST(ModelScenario, TakesTimingOutSoOrderDecides) {
  Scenario s = model_scenario(tiny());
  EXPECT_EQ(s.cluster.nic_latency_ns, 0);
  EXPECT_EQ(s.cluster.registration_base_ns, 0);
  EXPECT_TRUE(s.payload);
  for (const auto& step : s.workload.steps) {
    for (const auto& phase : step.phases) {
      for (const auto& t : phase.transfers) {
        EXPECT_EQ(t.send_offset_ns, 0);
        EXPECT_EQ(t.recv_offset_ns, 0);
      }
    }
  }
}

TEST(Explorer, AnExecutionReplaysExactlyFromItsSchedule) {
  const Scenario s = model_scenario(tiny());
  RandomWalkStrategy walk(77);
  NullTraceSink trace;
  std::vector<uint64_t> states_a;
  Execution a = run_execution(s, 1, walk, trace, &states_a);
  ASSERT_FALSE(a.choices.empty());
  ReplayStrategy replay(a.choices);
  std::vector<uint64_t> states_b;
  Execution b = run_execution(s, 1, replay, trace, &states_b);
  EXPECT_FALSE(b.diverged);
  EXPECT_EQ(b.choices, a.choices);
  EXPECT_EQ(b.widths, a.widths);
  EXPECT_EQ(b.events, a.events);
  EXPECT_EQ(states_b, states_a);
  EXPECT_EQ(a.outcome, CheckOutcome::kNothingFound);
}

TEST(Explorer, DfsExploresATinyScenarioToTheEnd) {
  CheckOptions o;
  o.strategy = CheckStrategy::kDfs;
  o.max_schedules = 100000;
  CheckReport r = check(tiny(), o);
  EXPECT_TRUE(r.exhausted);
  EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound);
  EXPECT_GT(r.schedules, 1u);
  EXPECT_GT(r.distinct_states, 1u);
  // The same search again: the same numbers (no hidden nondeterminism).
  CheckReport again = check(tiny(), o);
  EXPECT_EQ(again.schedules, r.schedules);
  EXPECT_EQ(again.distinct_states, r.distinct_states);
}

TEST(Explorer, RandomAndPctRunTheirBudgetOnACorrectProtocol) {
  for (CheckStrategy strategy : {CheckStrategy::kRandom, CheckStrategy::kPct}) {
    CheckOptions o;
    o.strategy = strategy;
    o.max_schedules = 50;
    o.seed = 5;
    CheckReport r = check(tiny(), o);
    EXPECT_EQ(r.schedules, 50u) << check_strategy_name(strategy);
    EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound);
    EXPECT_FALSE(r.counterexample);
  }
}

}  // namespace
}  // namespace tensorwire::model
