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

std::optional<Scenario> load_scenario_argument(const std::string& path, std::ostream& err,
                                               std::span<const ScenarioOverride> overrides) {
  if (std::string problem = scenario_path_problem(path); !problem.empty()) {
    err << kErrorPrefix << problem << "\n";
    return std::nullopt;
  }
  try {
    return load_scenario_file(path, overrides);
  } catch (const ScenarioError& e) {
    err << kErrorPrefix << e.what() << "\n";
  } catch (const std::exception& e) {
    err << kErrorPrefix << "cannot load scenario '" << path << "': " << e.what() << "\n";
  }
  return std::nullopt;
}

std::optional<std::vector<ScenarioOverride>> parse_override_flags(
    const std::vector<std::string>& flags, std::ostream& err) {
  std::vector<ScenarioOverride> overrides;
  for (const std::string& flag : flags) {
    Result<ScenarioOverride> parsed = parse_scenario_override(flag);
    if (!parsed) {
      err << kErrorPrefix << "--set: " << parsed.status().message() << "\n";
      return std::nullopt;
    }
    overrides.push_back(std::move(parsed).value());
  }
  return overrides;
}

std::string override_flags_text(std::span<const ScenarioOverride> overrides) {
  std::string text;
  for (const ScenarioOverride& o : overrides) {
    // Single quotes keep the shell from reading [*] or spaces; a quote inside
    // is closed, escaped and reopened.
    std::string quoted;
    for (char c : o.key + "=" + o.value) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    text += " --set '" + quoted + "'";
  }
  return text;
}

}  // namespace tensorwire::app
