// Runs a collective (broadcast) scenario on the simulator: plans the transfer
// graph, runs one TransferOperation per rank, checks the invariants as it goes
// and every destination's bytes at the end (payload mode), and reports what
// happened as a RunReport with its BroadcastResult. run_simulation calls it
// for protocols of collective shape.
#pragma once

#include "core/protocols/realm_broadcast/planted_collective_bug.h"
#include "core/protocols/realm_broadcast/transfer_graph.h"
#include "core/status.h"
#include "core/trace_sink.h"
#include "runner/run_report.h"
#include "runner/simulation_options.h"
#include "scenario/scenario.h"

namespace tensorwire {

// Plans only (no simulation): for `tensorwire plan` without timings and for
// planner benchmarks. Errors are bad input (an impossible pool, say).
Result<collectives::TransferGraph> plan_scenario_broadcast(const Scenario& scenario);

// Runs with options.scheduler, observer and on_attached hooks (the model
// checker's hooks). `bug`, where set, overrides the planted bug of the
// scenario's [protocol.realm_broadcast] options.
RunReport run_broadcast(const Scenario& scenario, const SimulationOptions& options,
                        TraceSink& trace,
                        collectives::PlantedCollectiveBug bug = collectives::PlantedCollectiveBug::kNone);

}  // namespace tensorwire
