// A scenario's top-level `include`: other TOML files (hardware profiles) whose
// tables are merged under the scenario's own, so that one profile of an era's
// machines can be shared by many scenarios and a scenario still overrides any
// key it sets itself.
#pragma once

#include <toml++/toml.h>

#include <string>

namespace tensorwire {

// Most files one scenario may include.
inline constexpr size_t kMaxIncludes = 16;

// Reads root's `include` (a file name, or an array of them), merges each file
// into `root` in order (a key already in root, or from an earlier include,
// wins; tables merge key by key), and removes `include`. A name is looked up
// relative to `base_dir` (the scenario's folder), then in the source tree's
// scenarios/ folder. Values merged in keep their own file and line for error
// messages. Throws ScenarioError (naming `file`, the key and the problem) on a
// missing or unreadable file, bad TOML, an include in an included file, or a
// key whose type differs between the two (a table in one, a value in the other).
void merge_includes(toml::table& root, const std::string& file, const std::string& base_dir);

}  // namespace tensorwire
