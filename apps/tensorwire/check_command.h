// `tensorwire check SCENARIO [--strategy dfs|random|pct] [--max-schedules N]
// [--seed N] [--pct-depth D] [--replay FILE] [--out PREFIX] [--plant-bug NAME]
// [--faults LIST] [--max-faults K] [--memory-limit SIZE] [--no-shrink] [--swarm N]`: explore the
// orders in which a scenario's same-time events can run (model/explorer.h).
// A counterexample found by a search is shrunk (model/counterexample_shrinker.h)
// before it is written; the one found is kept beside it.
// Exit codes: 0 nothing found (dfs: every order explored; random, pct: in the
// schedules run), 1 safety violation, 3 liveness violation, 4 dfs stopped at
// --max-schedules before exploring every order and found nothing, 2 bad input
// (also --exact without dfs, --pct-depth without pct, a negative --seed).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "model/explorer.h"
#include "scenario/scenario.h"

namespace tensorwire::app {

struct CheckArgs {
  std::string scenario_path;
  std::string strategy = "random";
  uint64_t max_schedules = 1000;
  uint64_t seed = 0;
  bool has_seed = false;
  uint32_t pct_depth = 3;
  bool has_pct_depth = false;      // --pct-depth given (only pct takes it)
  std::string replay_path;
  std::string out_prefix = "tensorwire-check";
  std::string plant_bug = "none";  // a registered protocol's planted bug, by name: the bug zoo
  std::string faults = "none";     // kinds of injected faults (model::parse_fault_list)
  uint32_t max_faults = 1;         // per execution
  bool exact = false;              // dfs: cut at seen states only where no order is lost
  bool no_shrink = false;          // write the counterexample as found, not shrunk
  std::string memory_limit;        // --memory-limit as typed (checked); empty: the default
  uint64_t swarm = 0;              // --swarm N: check N scenarios the protocol draws (swarm_check.h)
  uint32_t jobs = 1;               // --jobs N: threads (0: every core); the result is the same
  uint32_t shard_index = 0;        // --shard I/N (check_shard.h)
  uint32_t shard_count = 0;        // 0: not sharded
  std::string result_path;         // --result FILE: the result as JSON (check_result_file.h)
};

CLI::App* add_check_command(CLI::App& app, CheckArgs& args);
int check_command(const CheckArgs& args, std::ostream& out, std::ostream& err, bool progress);
// The checker's options the flags ask for, on `scenario` (its seed unless --seed).
model::CheckOptions check_options_of(const CheckArgs& args, const Scenario& scenario);
// False, saying why on `err`, when --faults names a fault `scenario`'s protocol
// can never meet (abort: a collective has no steps an application aborts).
bool faults_fit_protocol(const CheckArgs& args, const Scenario& scenario, std::ostream& err);

}  // namespace tensorwire::app
