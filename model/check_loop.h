// The pieces of `check`'s loop that the one-thread loop (explorer.cc) and
// the threaded one (parallel_check.cc) share, so that both tally, seed and
// offer faults alike and give the same report.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/dpor_search.h"
#include "model/explorer.h"
#include "model/fingerprint_set.h"

namespace tensorwire::model {

// The strategy seed of execution `index` of a search seeded `seed`.
uint64_t derive_seed(uint64_t seed, uint64_t index);

// The faults the `index`-th execution of this search (or shard) may inject;
// random walks and pct force theirs at choice points drawn from
// `strategy_seed` below `expected_steps`; the first execution none.
FaultOffer fault_offer(const CheckOptions& options, uint64_t index, uint64_t strategy_seed,
                       uint64_t expected_steps);

// One PCT execution; `steps` (its k) grows to the most steps seen.
Execution run_pct(const Scenario& scenario, const CheckOptions& options, uint64_t strategy_seed,
                  uint64_t& steps, std::vector<uint64_t>& fingerprints, const FaultOffer& faults);
// One random walk.
Execution run_walk(const Scenario& scenario, const CheckOptions& options, uint64_t strategy_seed,
                   std::vector<uint64_t>& fingerprints, const FaultOffer& faults);

// The state cache, a lone QP error placed by races, and the shard.
void configure_dfs(DporSearch& dpor, const Scenario& scenario, const CheckOptions& options);

// Executions this shard of random walks or pct runs (all of them unsharded),
// and the global index of the n-th of them (dfs: n).
uint64_t shard_schedules(const CheckOptions& options);
uint64_t execution_index(const CheckOptions& options, uint64_t n);

// What an execution was run with, for the tally.
struct ExecutionKey {
  bool first_of_search = false;
  uint64_t strategy_seed = 0;
  const FaultOffer& faults;
  std::span<const uint64_t> fingerprints;  // random and pct: the states it reached
};

// The report as executions are added in the search's order, and what later
// executions are drawn with (the measured k's).
struct CheckTally {
  CheckReport report;
  FingerprintSet states;  // random and pct
  uint64_t total = 0;                   // executions at most, for the progress
  uint64_t expected_steps = 1;          // where a forced fault may go
  uint64_t pct_steps = 1;               // pct's k: the most steps an execution took so far
  // True when the search stops here (a violation, kept as the counterexample).
  bool add(Execution&& e, const ExecutionKey& key, const CheckProgress& on_progress);
  void finish(const CheckOptions& options, const DporSearch* dpor);  // dfs: its search
};

}  // namespace tensorwire::model
