// The summary's "where each Recv waited" section: every transfer's breakdown
// (core/transfer_breakdown.h) into control round trips, queueing, wire,
// copies and other, one line per tensor for small runs, summed per phase for
// larger ones. Empty when no transfer has a breakdown (verbs, collectives).
#pragma once

#include <cstddef>
#include <string>

#include "runner/run_report.h"

namespace tensorwire::report {

// Runs with more transfers than `max_tensor_rows` get per-phase totals.
std::string transfer_breakdown_section(const RunReport& report, size_t max_tensor_rows = 12);

}  // namespace tensorwire::report
