// The simulator's side of `tensorwire calibrate`'s fit: the same ping-pong
// scenarios the real backend ran (calibration_scenario.h's generated text),
// simulated with a given nic_latency and nic_bandwidth, timing-only.
#pragma once

#include <cstdint>
#include <vector>

#include "apps/tensorwire/calibration_fit.h"
#include "apps/tensorwire/calibration_scenario.h"

namespace tensorwire::app {

// The simulated steady step (median of steps 1..) of each run, with every
// other [cluster] key at the generated scenario's defaults.
SimulatorProbe simulate_runs(const std::vector<CalibrationRun>& runs, uint32_t steps,
                             double nic_latency_ns, double ns_per_byte);

// The same for a ping-pong (one tensor a step) at each size.
SimulatorProbe simulate_ping_pong(const std::vector<uint64_t>& sizes, uint32_t steps,
                                  double nic_latency_ns, double ns_per_byte);

}  // namespace tensorwire::app
