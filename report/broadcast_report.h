// What a broadcast run prints and writes: the human summary (per destination
// completion, bytes per link, peak IB memory, the pipelined lower bound) and
// the results JSON. Deterministic: no wall-clock times.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runner/broadcast_run.h"

namespace tensorwire::report {

std::string broadcast_summary_text(const BroadcastReport& report);
nlohmann::ordered_json broadcast_results_json(const BroadcastReport& report);
std::string broadcast_results_json_text(const BroadcastReport& report);

// The transfer graph as Graphviz DOT: buffers as nodes (grouped by node of the
// cluster), copies as edges labelled with bytes and, where the run got that
// far, the simulated time the copy first became busy.
std::string transfer_graph_dot(const BroadcastReport& report);

}  // namespace tensorwire::report
