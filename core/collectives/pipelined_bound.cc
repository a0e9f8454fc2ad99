#include "core/collectives/pipelined_bound.h"

#include <algorithm>
#include <cmath>

namespace tensorwire::collectives {
namespace {

TimeNs time_ns(double bytes, double bytes_per_s) {
  return bytes_per_s > 0 ? static_cast<TimeNs>(std::ceil(bytes * 1e9 / bytes_per_s)) : 0;
}

}  // namespace

PipelinedBound pipelined_lower_bound(const TransferGraph& graph, const ClusterTopology& topology,
                                     uint64_t chunk_bytes) {
  PipelinedBound bound;
  bound.link_busy_ns.assign(topology.link_count(), 0);
  const double bytes = static_cast<double>(graph.bytes);
  const double chunk = static_cast<double>(std::min(chunk_bytes, graph.bytes));
  std::vector<TimeNs> chunk_time(graph.copies.size(), 0);
  for (const TransferCopy& c : graph.copies) {
    double slowest = 0;
    for (const PathHop::Use& use : c.hop.uses) {
      bound.link_busy_ns[use.link.value] += time_ns(bytes, use.bandwidth_bytes_per_s);
      if (slowest == 0 || use.bandwidth_bytes_per_s < slowest) slowest = use.bandwidth_bytes_per_s;
    }
    chunk_time[c.id] = c.hop.latency_ns + time_ns(chunk, slowest);
  }
  for (uint32_t l = 0; l < bound.link_busy_ns.size(); ++l) {
    if (bound.link_busy_ns[l] > bound.busiest_link_ns) {
      bound.busiest_link_ns = bound.link_busy_ns[l];
      bound.busiest_link = LinkId{l};
    }
  }
  for (uint32_t d : graph.destinations) {
    TimeNs chain = 0;
    for (uint32_t b = d; graph.buffers[b].producer;) {
      const uint32_t c = *graph.buffers[b].producer;
      chain += chunk_time[c];
      b = graph.copies[c].from;
    }
    bound.startup_ns = std::max(bound.startup_ns, chain);
  }
  bound.total_ns = bound.busiest_link_ns + bound.startup_ns;
  return bound;
}

}  // namespace tensorwire::collectives
