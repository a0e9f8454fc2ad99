// Broadcast scenarios built in code for the collective tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/problem.h"
#include "core/protocols/realm_broadcast/broadcast_account.h"
#include "core/protocols/realm_broadcast/broadcast_workload.h"
#include "core/protocols/realm_broadcast/realm_broadcast_protocol.h"
#include "core/trace_sink.h"
#include "runner/simulation_run.h"
#include "scenario/scenario.h"

namespace tensorwire::collectives::testing {

inline Scenario broadcast_scenario(uint32_t nodes, uint32_t gpus, uint64_t bytes, MemoryId source,
                                   std::vector<MemoryId> destinations,
                                   BroadcastOptions options = {}, bool payload = true) {
  Scenario s;
  s.name = "test_broadcast";
  s.source_path = "<test>";
  s.seed = 5;
  s.payload = payload;
  s.protocol = protocol_config("realm_collective_broadcast");
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = gpus;
  BroadcastWorkload w;
  w.source = source;
  w.destinations = std::move(destinations);
  w.bytes = bytes;
  w.options = options;
  s.workload.kind = "broadcast";
  s.collective_workload = w;
  return s;
}

// Runs a broadcast scenario on the simulator the way `run` does, with `bug`
// planted (kNone: the scenario's own).
inline RunReport run_broadcast_scenario(Scenario s, const SimulationOptions& options, TraceSink& trace,
                               PlantedCollectiveBug bug = PlantedCollectiveBug::kNone) {
  if (bug != PlantedCollectiveBug::kNone) options_of(s.protocol.options).planted_bug = bug;
  return run_simulation(s, options, trace);
}

// The broadcast's result in a run's report (fails the test when it has none).
inline const BroadcastResult& broadcast_of(const RunReport& r) {
  const BroadcastResult* b = broadcast_result_of(r.collective.get());
  if (b == nullptr) {
    ADD_FAILURE() << "the run has no broadcast account: " << problem_lines(r.problems);
    static const BroadcastResult kEmpty;
    return kEmpty;
  }
  return *b;
}

inline const BroadcastWorkload& broadcast_workload_of(const Scenario& s) {
  return workload_of(s.collective_workload);
}

inline std::vector<MemoryId> every_memory(uint32_t nodes, uint32_t gpus) {
  std::vector<MemoryId> out;
  for (uint32_t n = 0; n < nodes; ++n) {
    out.push_back(MemoryId::host(n));
    for (uint32_t g = 0; g < gpus; ++g) out.push_back(MemoryId::gpu_of(n, g));
  }
  return out;
}

inline std::string joined(const std::vector<Problem>& problems) { return problem_lines(problems); }

}  // namespace tensorwire::collectives::testing
