// The model checker's loop: run a scenario again and again on the simulator,
// each time with the order of same-time events chosen by a strategy, and stop
// at the first execution that breaks a check. Every execution is a pure
// function of (scenario, seed, schedule), so a failing one replays exactly.
//
// The verdict comes from the kinds of the run's problems (core/problem.h):
// liveness when every unexplained problem is a hang (the simulator went idle
// with work pending: a deadlock, a request that never completes), safety when
// any other is left (wrong bytes, a broken invariant, a Recv that failed or
// completed twice). An injected fault explains the errors it could cause.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/coverage.h"
#include "core/problem.h"
#include "core/state_transitions.h"
#include "core/trace_sink.h"
#include "model/choice_strategy.h"
#include "scenario/scenario.h"

namespace tensorwire::model {

// kBadInput: a run hit a limit of the harness (payload memory, say) or could
// not be set up; the scenario cannot be checked as it is, and nothing is said
// about the protocol.
enum class CheckOutcome : uint8_t { kNothingFound, kSafety, kLiveness, kBadInput };
const char* check_outcome_name(CheckOutcome outcome);

enum class CheckStrategy : uint8_t { kDfs, kRandom, kPct };
const char* check_strategy_name(CheckStrategy strategy);

// The scenario as the checker runs it: ordering, not timing, decides. Every
// latency and fixed cost is 0 and every bandwidth the largest allowed, so that
// what could happen in either order happens at the same simulated time and the
// strategy picks; the application's Send and Recv calls of a phase are all
// made at its start, so their order is a choice too. Payload mode, so every
// delivered byte is checked.
Scenario model_scenario(Scenario scenario);

struct Execution {
  CheckOutcome outcome = CheckOutcome::kNothingFound;
  std::vector<Problem> problems;  // the invariants' first, then the run's
  std::vector<Problem> excused;   // those of `problems` an injected fault explains
  std::vector<uint32_t> choices;  // the schedule: one index per choice point
  std::vector<uint32_t> widths;   // how many events were ready at each
  uint64_t events = 0;
  bool diverged = false;  // a replayed schedule did not fit this execution
  uint64_t faults_injected = 0;
  bool fault_injected() const { return faults_injected > 0; }
  // Transitions each protocol state machine took, summed over the ranks.
  std::vector<TransitionTable> transitions;
  // The protocol's declared coverage with what this execution reached, but
  // for the transition tables' items (CheckTally::finish counts those once
  // from the search's summed `transitions`).
  Coverage coverage;
};

// One execution of an already model_scenario()'d scenario. With faults on
// offer, up to FaultOffer::max_faults strike (see FaultKind: a QP error breaks
// the queue pair between ranks 0 and 1, both ends, outstanding work flushed;
// a timeout fires the earliest pending one now; an abort ends the current
// step on one rank). A Recv that then fails with an error is what the
// protocol should do, not a violation (for a timeout: one Recv of its rank
// per timeout that fired, on its own or brought forward); wrong bytes and
// work left pending still are.
Execution run_execution(const Scenario& scenario, uint64_t seed, ChoiceStrategy& strategy,
                        TraceSink& trace, std::vector<uint64_t>* state_fingerprints = nullptr,
                        FaultOffer faults = {});

// What an injected QP error uses (both ends and both send queues of the queue
// pair between ranks 0 and 1; with more than two ranks every rank too, since
// stopping that transfer can change the shares of others' transfers): what
// dfs is told when it places the fault by its races
// (DporSearch::place_fault_by_races).
std::vector<sim::SharedObject> qp_error_objects(uint32_t ranks);

struct CheckOptions {
  CheckStrategy strategy = CheckStrategy::kRandom;
  uint64_t max_schedules = 1000;
  uint64_t seed = 1;        // the scenario's seed for content; strategies derive theirs
  uint32_t pct_depth = 3;
  std::vector<FaultKind> faults;  // explore injected faults of these kinds
  uint32_t max_faults = 1;        // at most this many per execution
  // dfs: cut at a state seen before only where that loses no order (see
  // DporSearch::cache_states); slower.
  bool exact = false;
  // Threads to run executions on (parallel_check.h): the result is the same
  // whatever the number; 1 runs everything on the calling thread.
  uint32_t jobs = 1;
  // Shard shard_index of shard_count (check --shard): random walks and pct
  // run the executions whose index is shard_index modulo shard_count; dfs
  // the alternatives DporSearch::keep_share deals it. One shard: the search.
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
  bool keep_states = false;  // fill CheckReport::states (to merge shards' states)
};

struct CheckReport {
  CheckOutcome outcome = CheckOutcome::kNothingFound;
  uint64_t schedules = 0;        // executions run
  uint64_t choice_points = 0;    // over all executions
  uint64_t distinct_states = 0;  // distinct fingerprints seen at choice points
  uint64_t events = 0;
  bool exhausted = false;        // dfs: every schedule was explored
  uint64_t cached_schedules = 0;  // dfs: executions that reached an explored state
  std::vector<TransitionTable> transitions;  // transitions taken, summed over executions
  Coverage coverage;  // declared items and what the executions reached, summed
  std::optional<Execution> counterexample;
  uint64_t counterexample_seed = 0;  // the strategy seed of the failing execution
  // The faults on offer in the failing execution, which its choices encode:
  // none for random's and pct's first, fault-free execution.
  std::vector<FaultKind> counterexample_faults;
  // With CheckOptions::keep_states: the distinct states' fingerprints, sorted.
  std::vector<uint64_t> states;
};

using CheckProgress = std::function<void(uint64_t done, uint64_t total)>;

// One line per state machine, "RdmaTensorRequest: Idle->Requested (12),
// Requested->Finished (3)": the transitions taken; "none" without machines.
std::string covered_transitions(const std::vector<TransitionTable>& tables);

CheckReport check(const Scenario& scenario, const CheckOptions& options,
                  CheckProgress on_progress = {});

}  // namespace tensorwire::model
