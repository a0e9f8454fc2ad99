#include "core/protocols/realm_broadcast/cluster_topology.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/property_map/function_property_map.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "core/assert.h"

namespace tensorwire::collectives {
namespace {

// An edge: what it costs a transfer (latency + bytes / cost bandwidth) and the
// resource it occupies. The network is modelled as tx port -> switch -> rx
// port; only the tx edge carries the per-byte cost, so one network hop costs
// latency + bytes / nic_bandwidth, like one local copy costs latency + bytes /
// pcie_bandwidth. The rx edge still names the receiver's port for accounting.
struct EdgeProps {
  double cost_bandwidth = 0;  // 0: no per-byte cost
  TimeNs latency_ns = 0;
  int64_t link = -1;          // -1: occupies nothing the simulator serialises
  double link_bandwidth = 0;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                    boost::no_property, EdgeProps>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

}  // namespace

std::string MemoryId::name() const {
  return "node" + std::to_string(node) + (is_host() ? "/host" : "/gpu" + std::to_string(gpu));
}

// Vertex layout per node: host, gpu0..gpuG-1, nic tx, nic rx; the switch last.
// The local graph is one node's host and GPUs only (the same for every node:
// GPUDirect changes only the NIC edges), used for intra-node paths.
struct ClusterTopology::Graphs {
  // Built in place: adjacency_list's assignment copies edge by edge (and GCC 12
  // warns, wrongly, about boost::optional inside that copy).
  Graphs(uint32_t cluster_vertices, uint32_t local_vertices)
      : cluster(cluster_vertices), local(local_vertices) {}
  Graph cluster;
  Graph local;
  uint32_t stride = 0;  // vertices per node in `cluster`
  uint32_t links_per_node = 0;
  // Shortest-path trees by (source vertex, bytes): planners ask for many
  // destinations from one source. Not thread-safe (planning is single-threaded).
  mutable std::map<std::pair<uint32_t, uint64_t>, std::vector<Vertex>> cluster_trees;
  mutable std::map<std::pair<uint32_t, uint64_t>, std::vector<Vertex>> local_trees;
};

namespace {

uint32_t link_tx(uint32_t node, uint32_t per_node) { return node * per_node + 0; }
uint32_t link_rx(uint32_t node, uint32_t per_node) { return node * per_node + 1; }
uint32_t link_cpu(uint32_t node, uint32_t per_node) { return node * per_node + 2; }
uint32_t link_engine(uint32_t node, uint32_t gpu, uint32_t per_node) {
  return node * per_node + 3 + gpu;
}

void add_edge(Graph& g, uint32_t a, uint32_t b, EdgeProps props) {
  boost::add_edge(a, b, props, g);
}

// The intra-node edges of node `node` into `g`, whose vertex `base` is its host.
// Link ids are for `node`.
void add_node_memories(Graph& g, uint32_t base, uint32_t node, const Cluster& s,
                       uint32_t per_node) {
  for (uint32_t gpu = 0; gpu < s.gpus_per_node; ++gpu) {
    const int64_t engine = link_engine(node, gpu, per_node);
    const EdgeProps pcie{s.pcie_bandwidth_bytes_per_s, s.pcie_latency_ns, engine,
                         s.pcie_bandwidth_bytes_per_s};
    add_edge(g, base, base + 1 + gpu, pcie);
    add_edge(g, base + 1 + gpu, base, pcie);
    if (s.nvlink_bandwidth_bytes_per_s > 0) {
      for (uint32_t other = 0; other < s.gpus_per_node; ++other) {
        if (other == gpu) continue;
        // The simulator runs a device-to-device copy on the source GPU's engine.
        add_edge(g, base + 1 + gpu, base + 1 + other,
                 {s.nvlink_bandwidth_bytes_per_s, s.nvlink_latency_ns, engine,
                  s.nvlink_bandwidth_bytes_per_s});
      }
    }
  }
}

std::vector<Vertex> shortest_path_tree(const Graph& g, Vertex src, uint64_t bytes) {
  std::vector<Vertex> pred(boost::num_vertices(g));
  std::vector<double> dist(boost::num_vertices(g));
  const double b = static_cast<double>(bytes);
  auto weight = boost::make_function_property_map<Edge, double>([&g, b](const Edge& e) {
    const EdgeProps& p = g[e];
    double w = static_cast<double>(p.latency_ns);
    if (p.cost_bandwidth > 0) w += b * 1e9 / p.cost_bandwidth;
    return w;
  });
  boost::dijkstra_shortest_paths(
      g, src,
      boost::predecessor_map(boost::make_iterator_property_map(pred.begin(),
                                                               boost::get(boost::vertex_index, g)))
          .distance_map(boost::make_iterator_property_map(dist.begin(),
                                                          boost::get(boost::vertex_index, g)))
          .weight_map(weight));
  return pred;
}

// The vertices from src to dst (both included), or empty when unreachable.
std::vector<Vertex> path_in_tree(const std::vector<Vertex>& pred, Vertex src, Vertex dst) {
  std::vector<Vertex> path{dst};
  Vertex v = dst;
  while (v != src) {
    if (pred[v] == v) return {};
    v = pred[v];
    path.push_back(v);
    TW_ASSERT_MSG(path.size() <= pred.size(), "a shortest-path tree has no cycle");
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace

ClusterTopology::ClusterTopology(Cluster cluster)
    : cluster_(std::move(cluster)),
      graphs_(std::make_unique<Graphs>(cluster_.nodes * (cluster_.gpus_per_node + 3) + 1,
                                       cluster_.gpus_per_node + 1)) {
  const uint32_t G = cluster_.gpus_per_node;
  Graphs& gr = *graphs_;
  gr.stride = G + 3;
  gr.links_per_node = G + 3;
  const uint32_t sw = cluster_.nodes * gr.stride;
  for (uint32_t n = 0; n < cluster_.nodes; ++n) {
    const uint32_t base = n * gr.stride;
    const uint32_t tx = base + G + 1;
    const uint32_t rx = base + G + 2;
    add_node_memories(gr.cluster, base, n, cluster_, gr.links_per_node);
    add_edge(gr.cluster, base, tx, {});
    add_edge(gr.cluster, rx, base, {});
    for (uint32_t gpu = 0; gpu < G; ++gpu) {
      if (!cluster_.has_gpu_direct(n, gpu)) continue;
      add_edge(gr.cluster, base + 1 + gpu, tx, {});
      add_edge(gr.cluster, rx, base + 1 + gpu, {});
    }
    add_edge(gr.cluster, tx, sw,
             {cluster_.nic_bandwidth_bytes_per_s, cluster_.nic_latency_ns, link_tx(n, gr.links_per_node),
              cluster_.nic_bandwidth_bytes_per_s});
    add_edge(gr.cluster, sw, rx,
             {0, 0, link_rx(n, gr.links_per_node), cluster_.nic_bandwidth_bytes_per_s});
  }
  add_node_memories(gr.local, 0, 0, cluster_, gr.links_per_node);
  TW_ASSERT(boost::num_vertices(gr.cluster) == sw + 1);
  TW_ASSERT(boost::num_vertices(gr.local) == G + 1);
}

ClusterTopology::~ClusterTopology() = default;
ClusterTopology::ClusterTopology(ClusterTopology&&) noexcept = default;
ClusterTopology& ClusterTopology::operator=(ClusterTopology&&) noexcept = default;

bool ClusterTopology::contains(MemoryId m) const {
  return m.node < cluster_.nodes && (m.is_host() || m.gpu < cluster_.gpus_per_node);
}

MemoryKind ClusterTopology::kind_of(MemoryId m) const {
  if (m.is_host()) return MemoryKind::kHostPinned;
  return cluster_.has_gpu_direct(m.node, m.gpu) ? MemoryKind::kDeviceGpuDirect
                                              : MemoryKind::kDeviceNoGpuDirect;
}

PathHop ClusterTopology::same_memory_hop(MemoryId m) const {
  TW_ASSERT(contains(m));
  PathHop hop;
  hop.from = m;
  hop.to = m;
  const uint32_t per = graphs_->links_per_node;
  if (m.is_host()) {
    hop.uses.push_back({{link_cpu(m.node, per)}, cluster_.host_memcpy_bandwidth_bytes_per_s});
  } else {
    const bool nvlink = cluster_.nvlink_bandwidth_bytes_per_s > 0;
    hop.uses.push_back({{link_engine(m.node, m.gpu, per)},
                        nvlink ? cluster_.nvlink_bandwidth_bytes_per_s
                               : cluster_.pcie_bandwidth_bytes_per_s});
    hop.latency_ns = nvlink ? cluster_.nvlink_latency_ns : cluster_.pcie_latency_ns;
  }
  return hop;
}

std::optional<MemoryPath> ClusterTopology::find_fastest_path(MemoryId src, MemoryId dst,
                                                             uint64_t bytes) const {
  if (!contains(src) || !contains(dst)) return std::nullopt;
  MemoryPath path;
  const double b = static_cast<double>(bytes);
  if (src == dst) return path;
  Graphs& gr = *graphs_;
  const bool local = src.node == dst.node;
  const Graph& g = local ? gr.local : gr.cluster;
  auto vertex_of = [&](MemoryId m) -> Vertex {
    const uint32_t in_node = m.is_host() ? 0 : 1 + m.gpu;
    return local ? in_node : m.node * gr.stride + in_node;
  };
  const Vertex s = vertex_of(src);
  auto& trees = local ? gr.local_trees : gr.cluster_trees;
  auto key = std::pair<uint32_t, uint64_t>(static_cast<uint32_t>(s), bytes);
  auto it = trees.find(key);
  if (it == trees.end()) it = trees.emplace(key, shortest_path_tree(g, s, bytes)).first;
  const std::vector<Vertex> vertices = path_in_tree(it->second, s, vertex_of(dst));
  if (vertices.empty()) return std::nullopt;

  // Split the vertex path at memories: each stretch between two memories is one hop.
  const uint32_t G = cluster_.gpus_per_node;
  auto memory_at = [&](Vertex v) -> std::optional<MemoryId> {
    if (local) return v == 0 ? MemoryId::host(src.node) : MemoryId::gpu_of(src.node, v - 1);
    const uint32_t node = static_cast<uint32_t>(v / gr.stride);
    const uint32_t in_node = static_cast<uint32_t>(v % gr.stride);
    if (node >= cluster_.nodes || in_node > G) return std::nullopt;  // NIC or switch
    return in_node == 0 ? MemoryId::host(node) : MemoryId::gpu_of(node, in_node - 1);
  };
  const int64_t link_offset = local ? int64_t{src.node} * gr.links_per_node : 0;
  PathHop hop;
  hop.from = src;
  for (size_t i = 1; i < vertices.size(); ++i) {
    const auto [e, found] = boost::edge(vertices[i - 1], vertices[i], g);
    TW_ASSERT_MSG(found, "consecutive vertices of a shortest path share an edge");
    const EdgeProps& p = g[e];
    hop.latency_ns += p.latency_ns;
    if (p.link >= 0) {
      hop.uses.push_back({{static_cast<uint32_t>(p.link + link_offset)}, p.link_bandwidth});
    }
    if (p.cost_bandwidth > 0) path.cost_ns += static_cast<TimeNs>(b * 1e9 / p.cost_bandwidth);
    path.cost_ns += p.latency_ns;
    if (std::optional<MemoryId> m = memory_at(vertices[i])) {
      hop.to = *m;
      hop.network = hop.from.node != hop.to.node;
      path.hops.push_back(std::move(hop));
      hop = PathHop{};
      hop.from = *m;
    }
  }
  // The last vertex is dst's memory: the path ends with a whole hop into it.
  TW_ASSERT(!path.hops.empty() && path.hops.front().from == src && path.hops.back().to == dst);
  return path;
}

uint32_t ClusterTopology::link_count() const { return cluster_.nodes * graphs_->links_per_node; }

std::string ClusterTopology::link_name(LinkId link) const {
  TW_ASSERT(link.value < link_count());
  const uint32_t per = graphs_->links_per_node;
  const uint32_t node = link.value / per;
  const uint32_t which = link.value % per;
  const std::string n = "node" + std::to_string(node);
  switch (which) {
    case 0: return n + "/nic tx";
    case 1: return n + "/nic rx";
    case 2: return n + "/cpu memcpy";
    default: return n + "/gpu" + std::to_string(which - 3) + " copy engine";
  }
}

uint32_t ClusterTopology::vertex_count() const {
  return static_cast<uint32_t>(boost::num_vertices(graphs_->cluster));
}
uint32_t ClusterTopology::edge_count() const {
  return static_cast<uint32_t>(boost::num_edges(graphs_->cluster));
}

}  // namespace tensorwire::collectives
