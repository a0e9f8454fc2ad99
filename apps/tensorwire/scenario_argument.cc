#include "apps/tensorwire/scenario_argument.h"

#include <exception>
#include <filesystem>
#include <system_error>

#include "scenario/scenario_loader.h"

namespace tensorwire::app {
namespace {

// A clear message for a scenario path that cannot be a scenario file, before
// the loader sees it; empty when the path looks usable.
std::string scenario_path_problem(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return "scenario file '" + path + "' does not exist";
  }
  if (std::filesystem::is_directory(status)) {
    return "scenario file '" + path + "' is a directory, not a file";
  }
  return {};
}

}  // namespace

std::optional<Scenario> load_scenario_argument(const std::string& path, std::ostream& err) {
  if (std::string problem = scenario_path_problem(path); !problem.empty()) {
    err << kErrorPrefix << problem << "\n";
    return std::nullopt;
  }
  try {
    return load_scenario_file(path);
  } catch (const ScenarioError& e) {
    err << kErrorPrefix << e.what() << "\n";
  } catch (const std::exception& e) {
    err << kErrorPrefix << "cannot load scenario '" << path << "': " << e.what() << "\n";
  }
  return std::nullopt;
}

}  // namespace tensorwire::app
