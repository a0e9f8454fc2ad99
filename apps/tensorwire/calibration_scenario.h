// The scenarios `tensorwire calibrate` generates: the real backend runs them
// (calibration_measure.h) and the simulator runs the same text
// (calibration_simulator.h), so both sides measure one workload.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace tensorwire::app {

// One generated measurement: `count` tensors of `bytes` bytes a step.
struct CalibrationRun {
  std::string name;
  uint32_t count = 1;
  uint64_t bytes = 0;
};

// A 2-rank scenario of the tensors workload (its default protocol): `count` tensors of `bytes` bytes
// from rank 0's to rank 1's host memory, Send and Recv called together, for
// `steps` steps. The simulator's probes load the same text.
std::string tensors_scenario_text(const std::string& name, uint32_t count, uint64_t bytes,
                                  uint32_t steps);

// The median of steps 1.. (step 0 pays the one-time costs); the single
// step when there is only one. Errors name `what` when there is none.
Result<double> steady_step_ns(const std::vector<double>& steps_ns, const std::string& what);

}  // namespace tensorwire::app
