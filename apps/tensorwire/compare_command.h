// `tensorwire compare A.json B.json`: two results JSON files (`run --json`, a
// simulator's or a real backend's) side by side per step and per tensor, with
// B/A and simulated/measured ratios (report/results_compare.h). Exit codes: 0
// compared (differences are output, not failure), 2 bad input (a file missing
// or not a valid results JSON; the message names the file and the JSON path).
#pragma once

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

namespace tensorwire::app {

struct CompareArgs {
  std::string a_path;
  std::string b_path;
};

CLI::App* add_compare_command(CLI::App& app, CompareArgs& args);

int compare_command(const CompareArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensorwire::app
