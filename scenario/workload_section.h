// The [workload] table of a scenario file -> a Workload, for one cluster.
// Two kinds: "tensors" (an explicit list of tensors, repeated every step, with
// meta-data changes at chosen steps) and "parameter_server" (generated from a
// model file; see parameter_server_workload.h).
#pragma once

#include <toml++/toml.h>

#include <string>

#include "core/cluster.h"
#include "core/workload/workload.h"

namespace tensorwire {

// `path` is the table's key path ("workload"); `scenario_dir` is where relative
// model paths resolve. `payload`: the run holds real bytes, so the bytes one
// step moves are bounded (scenario_limits::kMaxPayloadStepBytes).
Workload parse_workload_section(const toml::table& table, const std::string& file,
                                const Cluster& cluster, bool payload,
                                const std::string& scenario_dir);

}  // namespace tensorwire
