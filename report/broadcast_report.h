// What a broadcast run adds to the summary and the results JSON: per
// destination completion, bytes per link, the plan and the pipelined lower
// bound; and its transfer graph as DOT. Deterministic: no wall-clock times.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runner/run_report.h"

namespace tensorwire::report {

// The summary's middle section for a run with report.broadcast set.
std::string broadcast_summary_section(const RunReport& report);
// Adds "workload", "broadcast", "plan", "destinations", "links", "finish_ns"
// and "lower_bound" to a run's results JSON (report.broadcast set).
void add_broadcast_results(nlohmann::ordered_json& j, const RunReport& report);

// The transfer graph as Graphviz DOT: buffers as nodes (grouped by node of the
// cluster), copies as edges labelled with bytes and, where the run got that
// far, the simulated time the copy first became busy.
std::string transfer_graph_dot(const RunReport& report);

}  // namespace tensorwire::report
