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

TEST(Explorer, AnInjectedQpErrorFailsRecvsWithAnErrorWhichIsNoViolation) {
  const Scenario s = model_scenario(tiny());
  RandomWalkStrategy walk(1);
  NullTraceSink trace;
  Execution e = run_execution(s, 1, walk, trace, nullptr, FaultOffer{{FaultKind::kQpError}, 1, {{3, 0}}});
  EXPECT_TRUE(e.fault_injected());
  ASSERT_GT(e.widths.size(), 3u);
  EXPECT_EQ(e.choices[3], e.widths[3] - 1) << "the fault is the last alternative";
  bool failed_recv = false;
  for (const auto& p : e.problems) failed_recv = failed_recv || p.text.find("recv failed") != std::string::npos;
  EXPECT_TRUE(failed_recv);
  EXPECT_EQ(e.outcome, CheckOutcome::kNothingFound);
  // Replaying with the fault on offer takes the same path.
  ReplayStrategy replay(e.choices);
  Execution again = run_execution(s, 1, replay, trace, nullptr, FaultOffer{{FaultKind::kQpError}, 1, {}});
  EXPECT_FALSE(again.diverged);
  EXPECT_TRUE(again.fault_injected());
  EXPECT_EQ(again.problems, e.problems);
}

TEST(Explorer, DfsWithAQpErrorExploresEveryFaultPointOfATinyScenario) {
  CheckOptions o;
  o.strategy = CheckStrategy::kDfs;
  o.max_schedules = 100000;
  CheckReport plain = check(tiny(), o);
  o.faults = {FaultKind::kQpError};
  CheckReport faulty = check(tiny(), o);
  EXPECT_TRUE(faulty.exhausted);
  EXPECT_EQ(faulty.outcome, CheckOutcome::kNothingFound);
  EXPECT_GT(faulty.schedules, plain.schedules);
  o.faults = {FaultKind::kQpError, FaultKind::kRegistrationFailure};
  CheckReport both = check(tiny(), o);
  EXPECT_TRUE(both.exhausted);
  EXPECT_EQ(both.outcome, CheckOutcome::kNothingFound)
      << (both.counterexample ? problem_lines(both.counterexample->problems) : "");
  EXPECT_GT(both.schedules, faulty.schedules);
}

TEST(Explorer, ReportsTheStateMachineTransitionsItCovered) {
  CheckOptions o;
  o.strategy = CheckStrategy::kRandom;
  o.max_schedules = 20;
  CheckReport r = check(tiny(), o);
  // Two steps x one tensor x 20 executions: each request goes Idle -> Requested.
  ASSERT_EQ(r.transitions.size(), 2u);
  EXPECT_EQ(r.transitions[0].machine(), "RdmaTensorRequest");
  EXPECT_EQ(r.transitions[0].taken(0, 1), 40u);
  const std::string covered = covered_transitions(r.transitions);
  EXPECT_NE(covered.find("RdmaTensorRequest: Idle->Requested (40)"), std::string::npos) << covered;
  EXPECT_NE(covered.find("\nRdmaTensorResponse: "), std::string::npos) << covered;
  EXPECT_NE(covered.find("->Writing"), std::string::npos) << covered;
  EXPECT_EQ(covered_transitions({}), "none");
}

TEST(Explorer, AnInjectedRegistrationFailureFailsARecvWithTheReason) {
  const Scenario s = model_scenario(tiny());
  bool seen = false;
  // The first choice points come before the result and source registrations
  // of step 1; one of them must meet the failure.
  for (int64_t at = 0; at < 6 && !seen; ++at) {
    RandomWalkStrategy walk(2);
    NullTraceSink trace;
    Execution e = run_execution(s, 1, walk, trace, nullptr,
                                FaultOffer{{FaultKind::kRegistrationFailure}, 1, {{static_cast<uint64_t>(at), 0}}});
    EXPECT_EQ(e.outcome, CheckOutcome::kNothingFound) << problem_lines(e.problems);
    for (const auto& p : e.problems) seen = seen || p.text.find("injected failure") != std::string::npos;
  }
  EXPECT_TRUE(seen) << "no injected registration failure reached a Recv";
}

TEST(Explorer, AfterACrashTheLivingFinishAndTheDeadRanksRecvsAreNoHang) {
  // Three ranks: "a" between ranks 0 and 1, "b" from rank 2 to rank 0. The
  // crash hits the rank whose event runs at the chosen point.
  const Scenario s = model_scenario(load_scenario_string(R"(
name = "crash"
[cluster]
nodes = 3
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
src = 2
dst = 0
shape = [8]
)", "crash.toml"));
  uint64_t crashed = 0;
  uint64_t failed_with_error = 0;
  for (int64_t at = 0; at < 40; ++at) {
    RandomWalkStrategy walk(static_cast<uint64_t>(at) + 5);
    NullTraceSink trace;
    Execution e = run_execution(s, 1, walk, trace, nullptr, FaultOffer{{FaultKind::kCrash}, 1, {{static_cast<uint64_t>(at), 0}}});
    EXPECT_EQ(e.outcome, CheckOutcome::kNothingFound) << "crash at " << at << ": " << problem_lines(e.problems);
    if (!e.fault_injected()) continue;
    ++crashed;
    for (const auto& p : e.problems) {
      if (p.text.find("recv failed") != std::string::npos) ++failed_with_error;
    }
  }
  EXPECT_GT(crashed, 10u);
  EXPECT_GT(failed_with_error, 0u) << "no crash ever failed a Recv of the living";
}

// issue 18 #1: a run that hits a limit of the harness (here the payload memory
// a rank may hold) is bad input, whatever else it led to: never a safety or
// liveness violation of the protocol.
TEST(Explorer, ARunThatHitsThePayloadLimitIsBadInputNeverAViolation) {
  Scenario s = tiny();
  s.payload_limit_bytes_per_rank = 8;  // less than the 16-byte tensor
  CheckOptions options;
  options.strategy = CheckStrategy::kDfs;
  options.max_schedules = 50;
  const CheckReport r = check(s, options);
  ASSERT_EQ(r.outcome, CheckOutcome::kBadInput);
  EXPECT_EQ(r.schedules, 1u);  // stops at the first run: nothing is checked
  ASSERT_TRUE(r.counterexample.has_value());
  bool limit_named = false;
  for (const Problem& p : r.counterexample->problems) {
    EXPECT_NE(p.kind, ProblemKind::kSafety) << problem_line(p);
    limit_named = limit_named || (p.kind == ProblemKind::kBadInput &&
                                  p.text.find("RESOURCE_LIMIT") != std::string::npos);
  }
  EXPECT_TRUE(limit_named) << problem_lines(r.counterexample->problems);
  // The same scenario within the limit checks clean.
  s.payload_limit_bytes_per_rank = 0;
  EXPECT_EQ(check(s, options).outcome, CheckOutcome::kNothingFound);
}

}  // namespace
}  // namespace tensorwire::model
