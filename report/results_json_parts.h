// The pieces the results JSON's tree (results_json) and its text
// (results_json_text) share, so the two cannot drift apart: the document
// without its bulk, the fields of a transport and a protocol, a step's totals.
// Internal to report/.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/results_json.h"

namespace tensorwire::report {

// kInTree: the whole document. kPlaceholders: "steps" (a point-to-point
// run's), "per_rank" and "resources" (where the backend measured some) hold
// null, in their places, for the text writer to write straight from the
// report.
enum class BulkParts { kInTree, kPlaceholders };

nlohmann::ordered_json results_document(const RunReport& report, const MeasuredWallTimes& measured,
                                        BulkParts bulk);

// A Recv that reported an error, or whose content failed verification.
bool transfer_failed(const TransferResult& t);

// The value at `index`, or nullopt past the end: measured times are optional
// all the way down.
std::optional<int64_t> measured_at(const std::vector<std::optional<int64_t>>& times, size_t index);

struct StepTotals {
  uint64_t bytes = 0;
  uint64_t failed = 0;
  TimeNs max_recv_latency_ns = 0;
};
StepTotals step_totals(const StepResult& step);

// A resource's busy time over the whole run's time (0 for a run of no time).
double run_utilisation(const ResourceUsage& u, const RunReport& report);

// A transport's counters under their JSON keys, in the file's order.
using TransportFields = std::array<std::pair<std::string_view, uint64_t>, 14>;
TransportFields transport_fields(const TransportStats& s);

// The protocol's counters by name (a repeated name keeps its first place and
// its last value, as a JSON object's key does), then "control_messages", their
// control messages in total.
std::vector<std::pair<std::string_view, uint64_t>> protocol_fields(const ProtocolCounters& counters);

}  // namespace tensorwire::report
