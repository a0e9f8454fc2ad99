#include "apps/tensorwire/calibration_simulator.h"

#include <cmath>
#include <string>

#include "apps/tensorwire/calibration_scenario.h"
#include "core/trace_sink.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::app {

SimulatorProbe simulate_runs(const std::vector<CalibrationRun>& runs, uint32_t steps,
                             double nic_latency_ns, double ns_per_byte) {
  // The simulator keeps whole nanoseconds; the probe records what it ran.
  const TimeNs latency_ns = static_cast<TimeNs>(std::llround(nic_latency_ns));
  SimulatorProbe probe{static_cast<double>(latency_ns), ns_per_byte, {}};
  for (const CalibrationRun& run : runs) {
    Scenario scenario = load_scenario_string(
        tensors_scenario_text(run.name, run.count, run.bytes, steps), run.name);
    scenario.cluster.nic_latency_ns = latency_ns;
    scenario.cluster.nic_bandwidth_bytes_per_s = 1e9 / ns_per_byte;
    SimulationOptions options;
    options.timing_only = true;
    NullTraceSink trace;
    const RunReport report = run_simulation(scenario, options, trace);
    std::vector<double> step_ns;
    for (const StepResult& s : report.workload.steps) {
      step_ns.push_back(static_cast<double>(s.end_ns - s.start_ns));
    }
    Result<double> steady = steady_step_ns(step_ns, run.name);
    probe.step_ns.push_back(steady ? *steady : 0);
  }
  return probe;
}

SimulatorProbe simulate_ping_pong(const std::vector<uint64_t>& sizes, uint32_t steps,
                                  double nic_latency_ns, double ns_per_byte) {
  std::vector<CalibrationRun> runs;
  for (uint64_t bytes : sizes) runs.push_back({"pingpong_" + std::to_string(bytes), 1, bytes});
  return simulate_runs(runs, steps, nic_latency_ns, ns_per_byte);
}

}  // namespace tensorwire::app
