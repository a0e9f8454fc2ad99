// tensorwire: the command line. Parses flags, dispatches to a command, and
// turns every failure into a message on stderr and an exit code: nothing
// escapes as an uncaught exception.
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/tensorwire/calibrate_command.h"
#include "apps/tensorwire/check_command.h"
#include "apps/tensorwire/check_merge_command.h"
#include "apps/tensorwire/compare_command.h"
#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/launch_command.h"
#include "apps/tensorwire/plot_command.h"
#include "apps/tensorwire/protocols_command.h"
#include "apps/tensorwire/run_command.h"
#include "apps/tensorwire/sweep_command.h"
#include "report/progress_bar.h"

#ifndef TENSORWIRE_VERSION
#define TENSORWIRE_VERSION "unknown"
#endif

namespace {

int tensorwire_main(int argc, char** argv) {
  using namespace tensorwire::app;
  CLI::App app{"tensorwire: RDMA tensor-transfer protocols on a deterministic simulator",
               "tensorwire"};
  app.set_version_flag("--version", std::string("tensorwire ") + TENSORWIRE_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok, 1 the run failed a check (check: a safety violation), 2 bad input "
      "(scenario file, results file, flag, output file), 3 check: a liveness violation, 4 check "
      "--strategy dfs: stopped at --max-schedules before exploring every order, 70 internal error.\nRun 'tensorwire COMMAND --help' for a command's options.");
  RunArgs run_args;
  CLI::App* run = add_run_command(app, run_args);
  PlanArgs plan_args;
  CLI::App* plan = add_plan_command(app, plan_args);
  CheckArgs check_args;
  CLI::App* check = add_check_command(app, check_args);
  CheckMergeArgs check_merge_args;
  CLI::App* check_merge = add_check_merge_command(app, check_merge_args);
  CompareArgs compare_args;
  CLI::App* compare = add_compare_command(app, compare_args);
  LaunchArgs launch_args;
  CLI::App* launch = add_launch_command(app, launch_args);
  SweepArgs sweep_args;
  CLI::App* sweep = add_sweep_command(app, sweep_args);
  PlotArgs plot_args;
  CLI::App* plot = add_plot_command(app, plot_args);
  ProtocolsArgs protocols_args;
  CLI::App* protocols = add_protocols_command(app, protocols_args);
  CalibrateArgs calibrate_args;
  CLI::App* calibrate = add_calibrate_command(app, calibrate_args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here too, with exit code 0.
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }
  if (run->parsed()) {
    return run_command(run_args, std::cout, std::cerr, tensorwire::report::stderr_is_terminal());
  }
  if (plan->parsed()) return plan_command(plan_args, std::cout, std::cerr);
  if (check->parsed()) {
    return check_command(check_args, std::cout, std::cerr, tensorwire::report::stderr_is_terminal());
  }
  if (check_merge->parsed()) return check_merge_command(check_merge_args, std::cout, std::cerr);
  if (compare->parsed()) return compare_command(compare_args, std::cout, std::cerr);
  if (launch->parsed()) return launch_command(launch_args, std::cout, std::cerr);
  if (sweep->parsed()) {
    return sweep_command(sweep_args, std::cout, std::cerr, tensorwire::report::stderr_is_terminal());
  }
  if (plot->parsed()) return plot_command(plot_args, std::cout, std::cerr);
  if (protocols->parsed()) return protocols_command(protocols_args, std::cout, std::cerr);
  if (calibrate->parsed()) return calibrate_command(calibrate_args, std::cout, std::cerr);
  std::cerr << "tensorwire: error: no command given\n" << app.help();
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return tensorwire_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "tensorwire: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "tensorwire: internal error: unknown exception\n";
  }
  return tensorwire::app::kExitInternalError;
}
