#include "apps/tensorwire/compare_command.h"

#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/scenario_argument.h"
#include "report/results_compare.h"
#include "report/results_reader.h"

namespace tensorwire::app {

CLI::App* add_compare_command(CLI::App& app, CompareArgs& args) {
  CLI::App* compare = app.add_subcommand(
      "compare",
      "Compare two results JSON files (run --json) per step and per tensor: each time, B/A, "
      "and simulated/measured where one side has measured wall times");
  compare->add_option("A", args.a_path, "Results JSON file, usually the simulator's")
      ->required()
      ->type_name("");
  compare->add_option("B", args.b_path, "Results JSON file, usually a real backend's")
      ->required()
      ->type_name("");
  return compare;
}

int compare_command(const CompareArgs& args, std::ostream& out, std::ostream& err) {
  Result<report::ResultsFile> a = report::read_results_file(args.a_path);
  if (!a) {
    err << kErrorPrefix << a.status().message() << "\n";
    return kExitBadInput;
  }
  Result<report::ResultsFile> b = report::read_results_file(args.b_path);
  if (!b) {
    err << kErrorPrefix << b.status().message() << "\n";
    return kExitBadInput;
  }
  out << report::comparison_text(*a, *b, report::compare_results(*a, *b));
  return kExitOk;
}

}  // namespace tensorwire::app
