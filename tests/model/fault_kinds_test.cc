// The faults that matter for the failure paths: a request timeout fired at a
// point the checker chooses, a step the application aborts, several faults in
// one execution. A Recv the protocol fails because of one of them is its right
// answer; a scenario with timeouts checks clean when the protocol is right,
// and a protocol that frees a withdrawn request's destination while the
// sender still writes it is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/protocols/tf_verbs_zero_copy/tf_verbs_protocol.h"
#include "model/explorer.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::model {
namespace {

const std::string kTimeouts = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_timeouts.toml";

// scenarios/model_timeouts.toml (request_timeout 1 ms), or with another.
Scenario timeouts_scenario(std::optional<TimeNs> request_timeout_ns = std::nullopt) {
  Scenario s = load_scenario_file(kTimeouts);
  if (request_timeout_ns) tf_verbs::options_of(s.protocol.options).request_timeout_ns = *request_timeout_ns;
  return s;
}

CheckOptions dfs_with(std::vector<FaultKind> faults, uint64_t max_schedules = 100000) {
  CheckOptions o;
  o.strategy = CheckStrategy::kDfs;
  o.max_schedules = max_schedules;
  o.faults = std::move(faults);
  return o;
}

uint64_t taken(const std::vector<TransitionTable>& tables, const std::string& machine,
               const std::string& from, const std::string& to) {
  for (const TransitionTable& t : tables) {
    if (t.machine() != machine) continue;
    size_t f = t.state_count(), g = t.state_count();
    for (size_t i = 0; i < t.state_count(); ++i) {
      if (t.state_name(i) == from) f = i;
      if (t.state_name(i) == to) g = i;
    }
    if (f < t.state_count() && g < t.state_count()) return t.taken(f, g);
  }
  return 0;
}

// A timeout short enough to fire on its own fails Recvs: the protocol's right
// answer (the issue this closes: 2 ns on model_2x2 used to be a violation).
TEST(FaultKinds, TimeoutsThatFireOnTheirOwnAreTheProtocolsRightAnswer) {
  const Scenario s = model_scenario(timeouts_scenario(2));
  RandomWalkStrategy walk(3);
  NullTraceSink trace;
  Execution e = run_execution(s, 1, walk, trace);
  EXPECT_FALSE(e.problems.empty()) << "a 2 ns timeout fails Recvs";
  EXPECT_EQ(e.outcome, CheckOutcome::kNothingFound);
  CheckReport r = check(timeouts_scenario(2), dfs_with({}, 3000));
  EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound);
}

TEST(FaultKinds, TimeoutsFiredAtEveryPointCheckClean) {
  CheckReport r = check(timeouts_scenario(), dfs_with({FaultKind::kTimeout}));
  EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound);
  EXPECT_TRUE(r.exhausted);
  // The timeouts raced with the protocol: requests withdrew before and after
  // a re-request.
  EXPECT_GT(taken(r.transitions, "RdmaTensorRequest", "Requested", "Withdrawn"), 0u);
  EXPECT_GT(taken(r.transitions, "RdmaTensorRequest", "ReRequested", "Withdrawn"), 0u);
  // Without the fault no timeout fires: nothing withdraws.
  CheckReport none = check(timeouts_scenario(), dfs_with({}));
  EXPECT_EQ(taken(none.transitions, "RdmaTensorRequest", "Requested", "Withdrawn"), 0u);
}

TEST(FaultKinds, StepAbortsAtEveryPointCheckClean) {
  CheckReport r = check(timeouts_scenario(), dfs_with({FaultKind::kStepAbort}));
  EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound);
  EXPECT_TRUE(r.exhausted);
  EXPECT_GT(taken(r.transitions, "RdmaTensorRequest", "Requested", "Withdrawn"), 0u);
}

TEST(FaultKinds, SeveralFaultsStrikeInOneExecutionAndReplay) {
  const Scenario s = model_scenario(timeouts_scenario());
  NullTraceSink trace;
  bool two_struck = false;
  for (uint64_t seed = 1; seed < 200 && !two_struck; ++seed) {
    RandomWalkStrategy walk(seed);
    FaultOffer offer{{FaultKind::kTimeout, FaultKind::kStepAbort}, 2, {{seed % 7, 0}, {seed % 11, 1}}};
    Execution e = run_execution(s, 1, walk, trace, nullptr, offer);
    EXPECT_EQ(e.outcome, CheckOutcome::kNothingFound) << "seed " << seed;
    EXPECT_LE(e.faults_injected, 2u);
    if (e.faults_injected < 2) continue;
    two_struck = true;
    ReplayStrategy replay(e.choices);
    Execution again = run_execution(s, 1, replay, trace, nullptr, FaultOffer{offer.kinds, 2, {}});
    EXPECT_FALSE(again.diverged);
    EXPECT_EQ(again.choices, e.choices);
    EXPECT_EQ(again.faults_injected, 2u);
    EXPECT_EQ(again.events, e.events);
  }
  EXPECT_TRUE(two_struck);
}

TEST(FaultKinds, AFaultIsOfferedOnlyWhereItCanStrike) {
  // Without a request_timeout no timer is ever pending: a timeout forced at
  // the first choice point waits for a point where it can strike, and none
  // comes. With one, it strikes.
  NullTraceSink trace;
  for (TimeNs timeout_ns : {TimeNs{0}, TimeNs{1000000}}) {
    const Scenario s = model_scenario(timeouts_scenario(timeout_ns));
    RandomWalkStrategy walk(5);
    Execution e = run_execution(s, 1, walk, trace, nullptr, FaultOffer{{FaultKind::kTimeout}, 1, {{0, 0}}});
    EXPECT_EQ(e.faults_injected, timeout_ns > 0 ? 1u : 0u) << timeout_ns;
    EXPECT_EQ(e.outcome, CheckOutcome::kNothingFound);
  }
}

// Withdrawal with a write in flight: the destination must stay alive until
// the sender confirms. Freeing it at once is found through either fault, by
// every strategy, and replays (dfs: named by the DMA sanitizer); without a
// fault nothing withdraws and nothing is found.
TEST(FaultKinds, FreeOnWithdrawIsFoundByTimeoutsAndAbortsAndReplays) {
  Scenario s = timeouts_scenario();
  tf_verbs::options_of(s.protocol.options).planted_bug = tf_verbs::PlantedBug::kFreeOnWithdraw;
  EXPECT_EQ(check(s, dfs_with({}, 2000)).outcome, CheckOutcome::kNothingFound);
  for (FaultKind kind : {FaultKind::kTimeout, FaultKind::kStepAbort}) {
    for (CheckStrategy strategy : {CheckStrategy::kDfs, CheckStrategy::kRandom, CheckStrategy::kPct}) {
      CheckOptions o = dfs_with({kind}, 200);
      o.strategy = strategy;
      CheckReport r = check(s, o);
      ASSERT_EQ(r.outcome, CheckOutcome::kSafety) << fault_kind_name(kind) << " " << check_strategy_name(strategy);
      ASSERT_TRUE(r.counterexample.has_value());
      const auto& problems = r.counterexample->problems;
      ReplayStrategy replay(r.counterexample->choices);
      NullTraceSink trace;
      Execution again = run_execution(model_scenario(s), o.seed, replay, trace, nullptr, FaultOffer{{kind}, 1, {}});
      EXPECT_EQ(again.outcome, CheckOutcome::kSafety);
      EXPECT_EQ(again.problems, problems);
      // dfs reaches the write in flight first; a walk may first meet the
      // write that arrives after the free (a remote access error that breaks
      // the queue pair, failing Recvs nothing excuses).
      if (strategy != CheckStrategy::kDfs) continue;
      EXPECT_TRUE(std::any_of(problems.begin(), problems.end(), [](const Problem& p) {
        return p.kind == ProblemKind::kSafety && p.text.find("DMA sanitizer") != std::string::npos;
      })) << fault_kind_name(kind) << " " << check_strategy_name(strategy) << ": " << problems.front().text;
    }
  }
}

}  // namespace
}  // namespace tensorwire::model
