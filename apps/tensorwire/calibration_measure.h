// The measuring half of `tensorwire calibrate --backend verbs`: a fixed set
// of micro-measurements on the real backend, each a generated scenario run
// by `launch`'s own code (one process per rank on this machine) with its
// results JSON and trace read back:
//   - ping-pong over sizes (one tensor rank 0 -> 1 per step): latency and
//     bandwidth;
//   - streaming (a few big tensors in one step): bandwidth under load;
//   - many tiny tensors in one step against one: per-message software cost;
//   - every ibv_reg_mr of the ping-pong runs, timed in the ranks' traces
//     ("register memory" slices): registration cost per call and per page;
//   - this machine's memcpy (host_memcpy_bandwidth), timed in this process.
// The copy engine (pcie_*) needs a GPU; none is measured here.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "apps/tensorwire/calibration_profile.h"
#include "apps/tensorwire/calibration_scenario.h"
#include "apps/tensorwire/run_command.h"
#include "core/status.h"

namespace tensorwire::app {

struct CalibrationPlan {
  std::vector<uint64_t> sizes;   // ping-pong sizes, strictly increasing
  uint32_t steps = 0;            // per run; the first is left out of medians
  // Every run is repeated this many times, the rounds interleaved (all runs
  // once, then again), so that a burst of load on a shared machine spreads
  // over every measurement instead of spoiling one; the medians are over all
  // rounds' steady steps.
  uint32_t rounds = 1;
  uint32_t many_count = 32;      // tiny tensors in the overhead step
  uint64_t tiny_bytes = 64;
  uint32_t stream_count = 4;     // big tensors in the streaming step
  uint64_t stream_bytes = 0;     // 0: the largest ping-pong size
  std::string work_dir;          // generated scenarios, results and traces
  VerbsArgs verbs;               // device, address, timeouts (not rank/world)
};

// Runs every measurement; progress lines go to `log`. An error names the
// measurement and carries the ranks' output.
Result<CalibrationMeasurements> measure_on_verbs(const CalibrationPlan& plan, std::ostream& log);

}  // namespace tensorwire::app
