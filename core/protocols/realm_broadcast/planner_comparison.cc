#include "core/protocols/realm_broadcast/planner_comparison.h"

#include "core/protocols/realm_broadcast/pipelined_bound.h"

namespace tensorwire::collectives {

std::vector<PlannerBound> bound_every_planner(const ClusterTopology& topology, MemoryId source,
                                              const std::vector<MemoryId>& destinations,
                                              uint64_t bytes, const BroadcastOptions& options) {
  std::vector<PlannerBound> out;
  for (uint32_t a = 0; a < kBroadcastAlgorithms; ++a) {
    BroadcastOptions o = options;
    o.algorithm = static_cast<BroadcastAlgorithm>(a);
    PlannerBound p;
    p.algorithm = o.algorithm;
    Result<TransferGraph> plan = plan_broadcast(topology, source, destinations, bytes, o);
    if (plan.is_ok()) {
      p.plan_bound_ns = pipelined_lower_bound(*plan, topology, o.max_chunk_bytes).total_ns;
    } else {
      p.error = plan.status().message();
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace tensorwire::collectives
