// check --jobs and --shard: threads give the one-thread report, and shards
// together cover the one-process search.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "model/explorer.h"
#include "model/schedule_replay.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::model {
namespace {

Scenario model_2x3() {
  return load_scenario_file(std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_2x3.toml");
}

CheckOptions dfs_options() {
  CheckOptions o;
  o.strategy = CheckStrategy::kDfs;
  o.max_schedules = 1'000'000;
  o.keep_states = true;
  return o;
}

void expect_same_report(const CheckReport& a, const CheckReport& b) {
  EXPECT_EQ(a.outcome, b.outcome);
  EXPECT_EQ(a.schedules, b.schedules);
  EXPECT_EQ(a.choice_points, b.choice_points);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.distinct_states, b.distinct_states);
  EXPECT_EQ(a.cached_schedules, b.cached_schedules);
  EXPECT_EQ(a.exhausted, b.exhausted);
  EXPECT_EQ(a.states, b.states);
  EXPECT_EQ(covered_transitions(a.transitions), covered_transitions(b.transitions));
}

TEST(ParallelCheck, DfsOnTwoThreadsIsTheOneThreadSearch) {
  const Scenario s = model_2x3();
  CheckOptions one = dfs_options();
  CheckOptions two = one;
  two.jobs = 2;
  const CheckReport a = check(s, one);
  const CheckReport b = check(s, two);
  ASSERT_TRUE(a.exhausted);
  EXPECT_GT(a.schedules, 100u);
  expect_same_report(a, b);
}

TEST(ParallelCheck, DfsWithAQpErrorOnThreeThreadsIsTheOneThreadSearch) {
  const Scenario s = model_2x3();
  CheckOptions one = dfs_options();
  one.faults = {FaultKind::kQpError};
  one.max_schedules = 3000;  // a prefix of the search: the same prefix
  CheckOptions three = one;
  three.jobs = 3;
  expect_same_report(check(s, one), check(s, three));
}

TEST(ParallelCheck, RandomAndPctWithFaultsOnTwoThreadsAreTheOneThreadRuns) {
  const Scenario s = model_2x3();
  for (CheckStrategy strategy : {CheckStrategy::kRandom, CheckStrategy::kPct}) {
    CheckOptions one;
    one.strategy = strategy;
    one.max_schedules = 400;
    one.faults = {FaultKind::kQpError, FaultKind::kTimeout};
    one.keep_states = true;
    CheckOptions two = one;
    two.jobs = 2;
    expect_same_report(check(s, one), check(s, two));
  }
}

TEST(ParallelCheck, APlantedBugFoundOnTwoThreadsReplays) {
  Scenario s = model_2x3();
  ASSERT_TRUE(s.protocol.descriptor().plant_bug(s.protocol.options, "send_done_before_write"));
  CheckOptions one = dfs_options();
  CheckOptions two = one;
  two.jobs = 2;
  const CheckReport a = check(s, one);
  const CheckReport b = check(s, two);
  ASSERT_EQ(b.outcome, CheckOutcome::kSafety);
  ASSERT_TRUE(b.counterexample.has_value());
  EXPECT_EQ(a.schedules, b.schedules);  // the same first violation
  EXPECT_EQ(a.counterexample->choices, b.counterexample->choices);
  ReplayStrategy replay(b.counterexample->choices);
  NullTraceSink trace;
  const Execution again = run_execution(model_scenario(s), one.seed, replay, trace);
  EXPECT_EQ(again.outcome, CheckOutcome::kSafety);
  EXPECT_FALSE(again.diverged);
}

// The union of N shards: the same verdict and the same distinct states as
// one process; every shard explores its share to the end; one shard is the
// search itself. (Schedules add up to more than one process runs: each
// shard caches states on its own, and shards' executions race to some
// alternatives alike.)
TEST(ParallelCheck, ShardsTogetherAreTheOneProcessSearch) {
  const Scenario s = model_2x3();
  const CheckReport single = check(s, dfs_options());
  ASSERT_TRUE(single.exhausted);
  for (uint32_t n : {1u, 2u, 7u}) {
    std::set<uint64_t> states;
    uint64_t schedules = 0;
    for (uint32_t i = 0; i < n; ++i) {
      CheckOptions o = dfs_options();
      o.shard_index = i;
      o.shard_count = n;
      const CheckReport r = check(s, o);
      EXPECT_EQ(r.outcome, single.outcome) << "shard " << i << " of " << n;
      EXPECT_TRUE(r.exhausted) << "shard " << i << " of " << n;
      states.insert(r.states.begin(), r.states.end());
      schedules += r.schedules;
      if (n == 1) expect_same_report(r, single);
    }
    EXPECT_EQ(states, std::set<uint64_t>(single.states.begin(), single.states.end())) << n << " shards";
    EXPECT_GE(schedules, single.schedules) << n << " shards";
  }
}

TEST(ParallelCheck, RandomShardsRunTheOneProcessWalks) {
  const Scenario s = model_2x3();
  CheckOptions whole;
  whole.max_schedules = 301;
  whole.keep_states = true;
  const CheckReport single = check(s, whole);
  for (uint32_t n : {2u, 7u}) {
    std::set<uint64_t> states;
    uint64_t schedules = 0;
    for (uint32_t i = 0; i < n; ++i) {
      CheckOptions o = whole;
      o.shard_index = i;
      o.shard_count = n;
      const CheckReport r = check(s, o);
      states.insert(r.states.begin(), r.states.end());
      schedules += r.schedules;
    }
    EXPECT_EQ(schedules, single.schedules);
    EXPECT_EQ(states, std::set<uint64_t>(single.states.begin(), single.states.end()));
  }
}

}  // namespace
}  // namespace tensorwire::model
