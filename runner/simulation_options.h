// How a simulator run is asked for: the mode and seed overrides, and the
// hooks the model checker attaches (who orders same-time events, who watches,
// what it injects and inspects).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "backend_sim/scheduler.h"
#include "backend_sim/sim_observer.h"
#include "core/rendezvous.h"
#include "core/workload/workload_driver.h"

namespace tensorwire {

namespace sim {
class Simulator;
}

struct SimulationOptions {
  bool timing_only = false;  // override the scenario's [run] mode
  uint64_t seed = 0;         // 0: the scenario's seed
  bool has_seed = false;
  // The model checker's adversarial allocator (sim::SimOptions::adversarial_memory).
  bool adversarial_memory = false;
  // Whether the model checker digests the simulated state (sim::SimOptions::state_digests).
  bool state_digests = true;
  // A planted allocator bug for the DMA sanitizer's tests: every rank's
  // allocations overlap (sim::SimOptions::plant_overlapping_allocations).
  bool plant_overlapping_allocations = false;
  // For the model checker: who orders same-time events (default FIFO), and
  // who watches the simulated hardware. Both outlive the run.
  sim::Scheduler* scheduler = nullptr;
  sim::SimObserver* observer = nullptr;
  // Called once the simulator exists, with the scheduler and observer
  // attached, before anything runs (the model checker injects faults into it
  // from its scheduler). The simulator lives until the run returns.
  std::function<void(sim::Simulator&)> on_attached;
  // Called once every rank's protocol has started (invariant checkers look
  // into the protocols through it). The pointers live until the run returns.
  std::function<void(const std::vector<Rendezvous*>&)> on_started;
  // Called once the workload driver exists, before it starts (state caches
  // digest the simulator and the driver). Both live until the run returns.
  std::function<void(const sim::Simulator&, WorkloadDriver&)> on_workload_started;
  // The run's measurements (resource usage, where each Recv waited, protocol
  // counters) in the report; a model checker reads none of them, and they are
  // a tenth of an execution it runs.
  bool measurements = true;
  // Count the protocol's transition tables into the report's coverage. A
  // model checker sums the tables over its executions and counts them once
  // per search instead (model::CheckTally::finish): the counts add up alike.
  bool transition_coverage = true;
};

using ProgressCallback = std::function<void(size_t steps_done, size_t steps_total)>;

}  // namespace tensorwire
