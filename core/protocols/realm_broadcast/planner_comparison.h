// Every planner on one broadcast: each algorithm plans the same workload (the
// scenario's other options kept) and is measured by its plan's pipelined bound
// against the physical bound, so that `tensorwire plan` shows which shape the
// cluster favours without simulating each.
#pragma once

#include <string>
#include <vector>

#include "core/protocols/realm_broadcast/broadcast_planner.h"
#include "core/protocols/realm_broadcast/physical_bound.h"

namespace tensorwire::collectives {

struct PlannerBound {
  BroadcastAlgorithm algorithm = BroadcastAlgorithm::kNaive;
  TimeNs plan_bound_ns = -1;  // -1: the algorithm could not plan it (error says why)
  std::string error;
};

std::vector<PlannerBound> bound_every_planner(const ClusterTopology& topology, MemoryId source,
                                              const std::vector<MemoryId>& destinations,
                                              uint64_t bytes, const BroadcastOptions& options);

}  // namespace tensorwire::collectives
