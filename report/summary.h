// The human summary a run prints on stdout: what ran (scenario, seed, mode,
// ranks, protocol), the workload's table (steps of tensors, or a broadcast's
// destinations and links), the totals people compare protocols by, and PASS
// or FAIL with the typed problems. Deterministic text: no wall-clock times.
#pragma once

#include <cstddef>
#include <string>

#include "runner/run_report.h"

namespace tensorwire::report {

struct SummaryOptions {
  // Longer step tables keep their first and last rows and elide the middle.
  size_t max_step_rows = 20;
  // Problems listed before "... and N more" (the results JSON has them all).
  size_t max_problems = 20;
};

std::string summary_text(const RunReport& report, const SummaryOptions& options = {});

}  // namespace tensorwire::report
