// `tensorwire run [SCENARIO] [--seed N] [--trace FILE] [--json FILE]
// [--timing-only] [--memory-limit SIZE] [--set KEY=VALUE ...]`: load a scenario, run it on the simulator, print the
// summary, write the requested files. Returns an exit code (exit_codes.h).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tensorwire::app {

// Flags of `run --backend verbs` (and `launch`): as typed, checked by
// verbs_run_command so that every error names its flag.
struct VerbsArgs {
  std::string rank;         // empty: not given (then Open MPI's or Slurm's environment)
  std::string world;
  std::string coordinator;  // HOST:PORT
  std::string device;       // empty: $TENSORWIRE_RDMA_DEVICE
  std::string address;      // empty: from the device's GID table
  bool gpu_as_host = false;
  bool busy_poll = false;   // never sleep in the progress loop
  bool completion_channel = false;  // sleep in the completion channel when idle
  std::string setup_timeout = "60";  // seconds
  std::string phase_timeout = "60";  // seconds
  std::string peer_timeout = "5";    // seconds
  std::string die_at;       // "RANK:STEP" (tests: that rank dies when it starts that step)
  std::string qp_error_at;  // "RANK:N" (tests: that rank's Nth send-side post breaks its QP)
};

struct RunArgs {
  std::string scenario_path;  // empty: default_scenario_path()
  uint64_t seed = 0;
  bool has_seed = false;      // --seed given (0 is a valid seed)
  std::string trace_path;     // empty: no trace
  std::string json_path;      // empty: no results JSON
  bool timing_only = false;
  std::string memory_limit;   // --memory-limit as typed (checked); empty: the default
  std::vector<std::string> overrides;  // --set KEY=VALUE, as typed (checked when loading)
  std::string backend = "sim";  // "sim" | "verbs"
  VerbsArgs verbs;
};

// Adds the verbs flags (--rank ... --die-at) to a command. `with_placement`:
// --rank/--world/--coordinator too (`launch` chooses those itself).
void add_verbs_options(CLI::App& command, VerbsArgs& args, bool with_placement);
// Adds --seed (checked: a whole number) to a command.
void add_seed_option(CLI::App& command, uint64_t& seed, bool& has_seed,
                     const std::string& description =
                         "Seed for every random choice (default: the scenario's seed). The "
                         "same seed gives byte-identical results");

// Adds --set KEY=VALUE (repeatable) to a command.
void add_override_option(CLI::App& command, std::vector<std::string>& overrides);

// Adds the `run` subcommand to `app`, filling `args` when it parses.
CLI::App* add_run_command(CLI::App& app, RunArgs& args);

// `err` gets errors and the progress bar (drawn only when `progress` is true).
int run_command(const RunArgs& args, std::ostream& out, std::ostream& err, bool progress);

// `tensorwire plan SCENARIO [--dot FILE]`: plan a broadcast, simulate it in
// timing-only mode, print the plan's summary and write the transfer graph.
struct PlanArgs {
  std::string scenario_path;
  std::string dot_path;  // empty: no DOT file
  std::vector<std::string> overrides;  // --set KEY=VALUE, as typed
};

CLI::App* add_plan_command(CLI::App& app, PlanArgs& args);
int plan_command(const PlanArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensorwire::app
