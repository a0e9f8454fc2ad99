// The coverage section `run` and `check` print, and its results JSON form:
// per group "reached X of Y", then the items never reached, by name, so a
// user sees which paths of the protocol a run or a search never exercised.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/coverage.h"

namespace tensorwire::report {

// "coverage        states 11 of 11, transitions 14 of 18, ...\n" then
// "never reached   transitions: A->B, C->D\n" (one line per group with such
// items, wrapped), or "never reached   none\n". Empty for an empty coverage
// (a backend that does not gather it).
std::string coverage_summary_text(const Coverage& coverage);

// {"<group>": {"declared": Y, "reached": X, "never_reached": [...]}, ...}.
nlohmann::ordered_json coverage_json(const Coverage& coverage);

}  // namespace tensorwire::report
