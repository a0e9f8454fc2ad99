// The pipelined lower bound of a transfer graph, "bytes / link bandwidth +
// depth x chunk time": its busiest link must carry everything that crosses it
// (bytes / bandwidth, summed over the copies on that link), and the pipeline
// must fill and drain: along the deepest chain, one chunk time of every stage
// but the slowest (whose chunks the busiest link already counts) plus every
// stage's latency. Exact for a chain whose slowest stage is the busiest link.
#pragma once

#include <cstdint>
#include <vector>

#include "core/protocols/realm_broadcast/cluster_topology.h"
#include "core/protocols/realm_broadcast/transfer_graph.h"

namespace tensorwire::collectives {

struct PipelinedBound {
  TimeNs busiest_link_ns = 0;
  LinkId busiest_link;
  TimeNs startup_ns = 0;  // fill and drain: (depth - 1) chunk times + latencies, deepest chain
  TimeNs total_ns = 0;
  std::vector<TimeNs> link_busy_ns;  // by LinkId
};

PipelinedBound pipelined_lower_bound(const TransferGraph& graph, const ClusterTopology& topology,
                                     uint64_t chunk_bytes);

}  // namespace tensorwire::collectives
