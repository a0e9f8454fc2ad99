// The pipelined lower bound of a transfer graph: no broadcast along it can
// finish before its busiest link has carried everything that crosses it
// (bytes / link bandwidth, summed over the copies on that link), plus the time
// the first chunk needs to reach the deepest destination (depth x chunk time:
// per copy on the way, its latency plus one chunk at its slowest link).
#pragma once

#include <cstdint>
#include <vector>

#include "core/collectives/cluster_topology.h"
#include "core/collectives/transfer_graph.h"

namespace tensorwire::collectives {

struct PipelinedBound {
  TimeNs busiest_link_ns = 0;
  LinkId busiest_link;
  TimeNs startup_ns = 0;  // depth x chunk time, on the slowest chain
  TimeNs total_ns = 0;
  std::vector<TimeNs> link_busy_ns;  // by LinkId
};

PipelinedBound pipelined_lower_bound(const TransferGraph& graph, const ClusterTopology& topology,
                                     uint64_t chunk_bytes);

}  // namespace tensorwire::collectives
