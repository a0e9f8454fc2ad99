// What a model checker plugs into a simulated run, attached the same way for
// every kind of workload (tensor Request/Response, collective broadcast): who
// orders same-time events and who watches the simulated hardware.
#pragma once

#include "backend_sim/simulator.h"
#include "runner/simulation_run.h"

namespace tensorwire {

// Gives the simulator options.scheduler (wrapped: the simulator owns its
// scheduler, the caller owns this one) and options.observer, where set, then
// calls options.on_attached.
void attach_model_hooks(sim::Simulator& simulator, const SimulationOptions& options);

// Runs the simulator until it is idle.
void run_until_idle(sim::Simulator& simulator);

}  // namespace tensorwire
