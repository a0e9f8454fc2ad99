#include "core/protocols/realm_broadcast/pipelined_bound.h"

#include <algorithm>
#include <cmath>

namespace tensorwire::collectives {
namespace {

// Saturating: a loadable scenario (1 TiB to thousands of destinations over a
// slow link) must not overflow the clock type.
constexpr double kForeverNs = 4e18;

double time_ns(double bytes, double bytes_per_s) {
  return bytes_per_s > 0 ? std::ceil(bytes * 1e9 / bytes_per_s) : 0;
}

TimeNs to_ns(double ns) { return static_cast<TimeNs>(std::min(ns, kForeverNs)); }

}  // namespace

PipelinedBound pipelined_lower_bound(const TransferGraph& graph, const ClusterTopology& topology,
                                     uint64_t chunk_bytes) {
  PipelinedBound bound;
  std::vector<double> busy(topology.link_count(), 0);
  const double bytes = static_cast<double>(graph.bytes);
  const double chunk = static_cast<double>(std::min(chunk_bytes, graph.bytes));
  std::vector<double> chunk_ns(graph.copies.size(), 0);
  std::vector<double> latency_ns(graph.copies.size(), 0);
  for (const TransferCopy& c : graph.copies) {
    double slowest = 0;
    for (const PathHop::Use& use : c.hop.uses) {
      busy[use.link.value] += time_ns(bytes, use.bandwidth_bytes_per_s);
      if (slowest == 0 || use.bandwidth_bytes_per_s < slowest) slowest = use.bandwidth_bytes_per_s;
    }
    chunk_ns[c.id] = time_ns(chunk, slowest);
    latency_ns[c.id] = static_cast<double>(c.hop.latency_ns);
  }
  bound.link_busy_ns.resize(busy.size());
  for (uint32_t l = 0; l < busy.size(); ++l) {
    bound.link_busy_ns[l] = to_ns(busy[l]);
    if (bound.link_busy_ns[l] > bound.busiest_link_ns) {
      bound.busiest_link_ns = bound.link_busy_ns[l];
      bound.busiest_link = LinkId{l};
    }
  }
  // A pipeline of stages moving n chunks needs n chunk times of its slowest
  // stage (counted in the busiest link) plus one chunk time of every other
  // stage, plus the latencies: the first chunk's trip minus the slowest stage.
  for (uint32_t d : graph.destinations) {
    double chain = 0;
    double slowest_stage = 0;
    for (uint32_t b = d; graph.buffers[b].producer;) {
      const uint32_t c = *graph.buffers[b].producer;
      chain += latency_ns[c] + chunk_ns[c];
      slowest_stage = std::max(slowest_stage, chunk_ns[c]);
      b = graph.copies[c].from;
    }
    bound.startup_ns = std::max(bound.startup_ns, to_ns(chain - slowest_stage));
  }
  bound.total_ns = to_ns(static_cast<double>(bound.busiest_link_ns) + static_cast<double>(bound.startup_ns));
  return bound;
}

}  // namespace tensorwire::collectives
