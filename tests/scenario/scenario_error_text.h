// The message loading a scenario text fails with, for error tests.
#pragma once

#include <string>

#include "scenario/scenario_loader.h"

namespace tensorwire::testing {

inline std::string scenario_error_of(const std::string& text, const std::string& file) {
  try {
    load_scenario_string(text, file, "");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(loaded without error)";
}

}  // namespace tensorwire::testing
