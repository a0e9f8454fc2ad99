// `tensorwire launch -n N SCENARIO [run's verbs flags]`: starts N local ranks
// of `tensorwire run SCENARIO --backend verbs` (fork + exec of this very
// executable with --rank r --world N --coordinator 127.0.0.1:PORT, PORT a free
// one), forwards each rank's stdout and stderr line by line with a "[rank r] "
// prefix, waits for all, and exits with the worst exit status (a rank killed
// by a signal counts as 1). Once a rank has failed (exited non-zero or by a
// signal), launch says which and how, and the others get --grace seconds
// (default: --peer-timeout) to end on their own (they should: they notice the
// lost rank at once), then SIGTERM, then SIGKILL two seconds later; launch
// says whom it stopped.
// This file is the command line; the processes are launch/rank_processes.h.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/tensorwire/run_command.h"

namespace tensorwire::app {

struct LaunchArgs {
  std::string ranks;  // -n
  std::string scenario_path;
  std::string json_path;
  std::string trace_path;
  uint64_t seed = 0;
  bool has_seed = false;
  std::string grace;         // seconds; empty: the --peer-timeout
  std::vector<std::string> overrides;  // --set KEY=VALUE, passed to every rank
  VerbsArgs verbs;           // without rank/world/coordinator
};

CLI::App* add_launch_command(CLI::App& app, LaunchArgs& args);

// The command line of rank `rank` (argv[0] is `self`).
std::vector<std::string> rank_command_line(const LaunchArgs& args, const std::string& self,
                                           uint32_t rank, uint32_t world,
                                           const std::string& coordinator);

int launch_command(const LaunchArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensorwire::app
