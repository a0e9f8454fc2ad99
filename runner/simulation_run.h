// Runs a scenario on the simulator: builds the simulated cluster, one
// Rendezvous of the scenario's protocol per rank, plays the workload, and collects what happened.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend_sim/scheduler.h"
#include "backend_sim/sim_observer.h"
#include "core/transport_stats.h"
#include "core/protocol_counters.h"
#include "core/rendezvous.h"
#include "core/state_transitions.h"
#include "core/trace_sink.h"
#include "core/workload/workload_driver.h"
#include "scenario/scenario.h"

namespace tensorwire {

namespace sim {
class Simulator;
}

struct SimulationOptions {
  bool timing_only = false;  // override the scenario's [run] mode
  uint64_t seed = 0;         // 0: the scenario's seed
  bool has_seed = false;
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
  std::function<void(const sim::Simulator&, const WorkloadDriver&)> on_workload_started;
};

struct SimulationReport {
  std::string scenario_name;
  std::string scenario_path;
  std::string backend = "sim";
  uint64_t seed = 0;
  bool payload = true;
  uint32_t ranks = 0;
  TimeNs simulated_end_ns = 0;
  uint64_t events_processed = 0;
  WorkloadResult workload;
  std::vector<TransportStats> rank_stats;
  TransportStats total_stats;
  std::vector<ProtocolCounters> protocol_counters;  // per rank
  // The protocol's state machines' transitions, summed over the ranks.
  std::vector<TransitionTable> transitions;
  // Payload bytes all ports sent during each step, in step order. Steps do not
  // overlap (the driver starts a step when the previous one has finished), so
  // the wire counter's growth between two step ends belongs to one step.
  std::vector<uint64_t> step_wire_bytes;
  // What went wrong, one line each (empty when the run passed every check).
  std::vector<std::string> problems;

  bool passed() const { return problems.empty(); }
};

// The problem line a transfer that failed a check becomes ("step 2 'w' 0->1:
// recv failed: ..." or "...: <mismatch>"); empty when it passed.
std::string transfer_problem(uint64_t step_id, const TransferResult& t);

using ProgressCallback = std::function<void(size_t steps_done, size_t steps_total)>;

SimulationReport run_simulation(const Scenario& scenario, const SimulationOptions& options,
                                TraceSink& trace, ProgressCallback on_progress = {});

}  // namespace tensorwire
