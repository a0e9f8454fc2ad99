// Runs a scenario on the simulator: builds the simulated cluster, runs the
// scenario's protocol over it, and collects what happened in a RunReport.
#pragma once

#include <cstdint>
#include <optional>

#include "core/problem.h"
#include "core/trace_sink.h"
#include "core/workload/workload_driver.h"
#include "runner/run_report.h"
#include "runner/simulation_options.h"
#include "scenario/scenario.h"

namespace tensorwire {

// The problem a transfer that failed a check becomes (transport: "step 2 'w'
// 0->1: recv failed: ..."; safety: "...: <mismatch>"); none when it passed.
std::optional<Problem> transfer_problem(uint64_t step_id, const TransferResult& t);

// What every backend's report starts from: the scenario, its protocol and
// workload kind, and the seed and mode the options settle on.
RunReport run_report_header(const Scenario& scenario, const SimulationOptions& options);

// A problem for each transfer that failed a check, and one when Recv done
// callbacks ran more than once (the checks every backend's workload gets).
void add_transfer_problems(RunReport& report);

// Runs the scenario's protocol on the simulator, whatever its shape: a
// point-to-point protocol plays the scenario's workload through one Rendezvous
// per rank; a collective protocol runs its own operation in the simulated
// world (core/collective.h). One report. `on_progress` hears steps done of a
// point-to-point workload, the protocol's progress_unit() of a collective.
RunReport run_simulation(const Scenario& scenario, const SimulationOptions& options,
                         TraceSink& trace, ProgressCallback on_progress = {});

}  // namespace tensorwire
