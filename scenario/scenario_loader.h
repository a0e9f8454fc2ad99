// Loading scenario files: TOML text -> a validated Scenario. Every error is a
// ScenarioError whose message starts with "file:line:column: key:".
#pragma once

#include <string>
#include <string_view>

#include "scenario/scenario.h"

namespace tensorwire {

// Reads and validates `path`. Model files named by a parameter-server workload
// are looked up relative to the scenario file's folder (a bare name "vgg16" as
// models/vgg16.toml there), then in <TENSORWIRE_SOURCE_ROOT>/scenarios/models/.
Scenario load_scenario_file(const std::string& path);

// Parses `text` as if it were a file named `source_name` (tests, --scenario-text).
// Relative model paths resolve against `base_dir` ("" = current directory).
Scenario load_scenario_string(std::string_view text, const std::string& source_name,
                              const std::string& base_dir = "");

// The scenario `./run` and `tensorwire run` use when none is named.
std::string default_scenario_path();

}  // namespace tensorwire
