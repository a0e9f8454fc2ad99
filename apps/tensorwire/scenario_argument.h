// The SCENARIO argument every command takes: checked as a path, then loaded,
// with one clear message on stderr when it cannot be.
#pragma once

#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "scenario/scenario_override.h"

namespace tensorwire::app {

// What every error line on stderr starts with.
inline constexpr const char* kErrorPrefix = "tensorwire: error: ";

// The loaded scenario, or nullopt after writing why not to `err` (the caller
// then exits with kExitBadInput).
// `overrides` (`--set`) are applied on top of the file (scenario_loader.h).
std::optional<Scenario> load_scenario_argument(const std::string& path, std::ostream& err,
                                               std::span<const ScenarioOverride> overrides = {});

// The --set flags as typed, parsed; nullopt after writing which one is not
// KEY=VALUE to `err`.
std::optional<std::vector<ScenarioOverride>> parse_override_flags(
    const std::vector<std::string>& flags, std::ostream& err);

// " --set 'KEY=VALUE'" per override, for a command line that replays a run.
std::string override_flags_text(std::span<const ScenarioOverride> overrides);

}  // namespace tensorwire::app
