// The SCENARIO argument every command takes: checked as a path, then loaded,
// with one clear message on stderr when it cannot be.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "scenario/scenario.h"

namespace tensorwire::app {

// What every error line on stderr starts with.
inline constexpr const char* kErrorPrefix = "tensorwire: error: ";

// The loaded scenario, or nullopt after writing why not to `err` (the caller
// then exits with kExitBadInput).
std::optional<Scenario> load_scenario_argument(const std::string& path, std::ostream& err);

}  // namespace tensorwire::app
