// `tensorwire run [SCENARIO] [--seed N] [--trace FILE] [--json FILE]
// [--timing-only]`: load a scenario, run it on the simulator, print the
// summary, write the requested files. Returns an exit code (exit_codes.h).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

namespace tensorwire::app {

struct RunArgs {
  std::string scenario_path;  // empty: default_scenario_path()
  uint64_t seed = 0;
  bool has_seed = false;      // --seed given (0 is a valid seed)
  std::string trace_path;     // empty: no trace
  std::string json_path;      // empty: no results JSON
  bool timing_only = false;
};

// Adds the `run` subcommand to `app`, filling `args` when it parses.
CLI::App* add_run_command(CLI::App& app, RunArgs& args);

// `err` gets errors and the progress bar (drawn only when `progress` is true).
int run_command(const RunArgs& args, std::ostream& out, std::ostream& err, bool progress);

// `tensorwire plan SCENARIO [--dot FILE]`: plan a broadcast, simulate it in
// timing-only mode, print the plan's summary and write the transfer graph.
struct PlanArgs {
  std::string scenario_path;
  std::string dot_path;  // empty: no DOT file
};

CLI::App* add_plan_command(CLI::App& app, PlanArgs& args);
int plan_command(const PlanArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensorwire::app
