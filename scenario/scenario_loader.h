// Loading scenario files: TOML text -> a validated Scenario. Every error is a
// ScenarioError whose message starts with "file:line:column: key:".
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "scenario/scenario.h"
#include "scenario/scenario_override.h"

namespace tensorwire {

// Reads and validates `path`. Model files named by a parameter-server workload
// are looked up relative to the scenario file's folder (a bare name "vgg16" as
// models/vgg16.toml there), then in <TENSORWIRE_SOURCE_ROOT>/scenarios/models/.
// A top-level `include` merges hardware profiles first (scenario_include.h);
// `overrides` (`--set KEY=VALUE`) are applied last and win over both.
Scenario load_scenario_file(const std::string& path,
                            std::span<const ScenarioOverride> overrides = {});

// Parses `text` as if it were a file named `source_name` (tests, --scenario-text).
// Relative model paths resolve against `base_dir` ("" = current directory).
Scenario load_scenario_string(std::string_view text, const std::string& source_name,
                              const std::string& base_dir = "",
                              std::span<const ScenarioOverride> overrides = {});

// The scenario `./run` and `tensorwire run` use when none is named.
std::string default_scenario_path();

}  // namespace tensorwire
