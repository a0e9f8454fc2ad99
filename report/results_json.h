// The machine-readable results of one run. One schema for every backend (the
// simulator and verbs; point-to-point and collective workloads alike), so field names say what was measured, not how.
// No wall-clock times, pointers or hash-map orders: a seed's results are the
// same bytes on every rerun. The schema is described in report/README.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/problem.h"
#include "runner/run_report.h"

namespace tensorwire::report {

// Bumped whenever a field is renamed, removed or changes meaning.
inline constexpr int kResultsSchemaVersion = 1;

// Wall-clock times a real backend measured, beside the times on the backend's
// own clock that RunReport holds. The simulator measures none; the
// verbs backend will. Indexed like report.workload.steps[i].transfers[j]; an
// index past the end, or nullopt, means "not measured" and writes no field.
struct MeasuredWallTimes {
  std::vector<std::optional<int64_t>> step_ns;                   // step start to end
  std::vector<std::vector<std::optional<int64_t>>> transfer_ns;  // Recv call to done
};

nlohmann::ordered_json results_json(const RunReport& report,
                                    const MeasuredWallTimes& measured = {});

// results_json(report) as indented text with a final newline. Text that is not
// valid UTF-8 (a tensor name from a file, say) is replaced, never thrown on.
std::string results_json_text(const RunReport& report,
                              const MeasuredWallTimes& measured = {});

// Transfers (Recvs) across every step: the "tensors" of the per-tensor ratios.
uint64_t tensors_transferred(const RunReport& report);

// The control messages (the protocol's counters of role kControlMessage) sent
// by every rank, and that count divided by tensors_transferred (0 with no
// tensors).
uint64_t control_messages(const RunReport& report);
double control_messages_per_tensor(const RunReport& report);

// {"kind": "liveness", "rank": 3 or null, ["peer": 1,] "text": "..."}.
nlohmann::ordered_json problem_json(const Problem& problem);

// The protocol counters of every rank added up.
ProtocolCounters total_protocol_counters(const RunReport& report);

}  // namespace tensorwire::report
