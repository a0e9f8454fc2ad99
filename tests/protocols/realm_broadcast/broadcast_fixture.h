// Broadcast scenarios built in code for the collective tests.
#pragma once

#include "core/problem.h"
#include <string>
#include <vector>

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
  s.broadcast = w;
  return s;
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
