// `--set KEY=VALUE`: one scenario key replaced from the command line, so that
// "what if the NIC were twice as fast" is a flag and a sweep can vary any key
// without editing the file. Applied after includes, so it wins over both.
#pragma once

#include <toml++/toml.h>

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tensorwire {

// KEY is a dotted path ("cluster.nic_bandwidth"); a component may index an
// array of tables ("workload.tensor[0].bytes") or name all of its entries
// ("workload.tensor[*].bytes"). VALUE is read as a TOML value when it is one
// (4, true, [1, 2], "text") and as a string otherwise (200Gbps, tf_verbs_zero_copy).
struct ScenarioOverride {
  std::string key;
  std::string value;
  // "--set KEY=VALUE", the name its errors carry.
  std::string source() const;
};

// "KEY=VALUE" as typed; an error names what is missing.
Result<ScenarioOverride> parse_scenario_override(std::string_view text);

// Sets every override's key in `root`, in order, creating missing tables on
// the way. Throws ScenarioError naming the override on a path that cannot be
// followed (a value where a table is needed, an index past an array's end).
void apply_scenario_overrides(toml::table& root, std::span<const ScenarioOverride> overrides);

}  // namespace tensorwire
