#include "core/protocols/realm_broadcast/broadcast_planner.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "core/assert.h"

namespace tensorwire::collectives {

const char* broadcast_algorithm_name(BroadcastAlgorithm algorithm) {
  switch (algorithm) {
    case BroadcastAlgorithm::kNaive: return "naive 1-to-n";
    case BroadcastAlgorithm::kAggregation: return "1-to-n aggregation";
    case BroadcastAlgorithm::kRadixTree: return "hierarchical radix tree";
    case BroadcastAlgorithm::kChain: return "pipelined chain";
  }
  return "?";
}

std::string validate_broadcast_options(const BroadcastOptions& o) {
  if (static_cast<uint32_t>(o.algorithm) >= kBroadcastAlgorithms) {
    return "algorithm must be 0, 1, 2 or 3";
  }
  if (o.radix_inter < 1) return "radix_inter must be at least 1 (1: inter-node aggregation)";
  if (o.min_chunk_bytes == 0) return "min_chunk must be at least 1 byte";
  if (o.max_chunk_bytes < o.min_chunk_bytes) return "max_chunk must be at least min_chunk";
  if (o.max_chunk_bytes > (1ull << 31)) return "max_chunk must be at most 2 GiB (one RDMA write)";
  if (o.ib_buffer_max_bytes < o.min_chunk_bytes) return "ib_buffer_size must be at least min_chunk";
  if (o.ib_pool_bytes < o.min_chunk_bytes) return "ib_pool_size must be at least min_chunk";
  if (o.registration_window_bytes != 0 && o.registration_window_bytes < o.min_chunk_bytes) {
    return "registration_window must be 0 (register whole) or at least min_chunk";
  }
  if (o.max_inflight_chunks == 0) return "max_inflight_chunks must be at least 1";
  return "";
}

namespace {

class GraphBuilder {
 public:
  GraphBuilder(const ClusterTopology& topology, uint64_t bytes) : topology_(topology) {
    graph_.bytes = bytes;
  }

  uint32_t add_buffer(MemoryId memory, BufferRole role) {
    TransferBuffer b;
    b.id = static_cast<uint32_t>(graph_.buffers.size());
    b.memory = memory;
    b.role = role;
    graph_.buffers.push_back(std::move(b));
    return graph_.buffers.back().id;
  }

  void add_copy(uint32_t from, uint32_t to, PathHop hop) {
    TW_ASSERT(from < graph_.buffers.size() && to < graph_.buffers.size() && from != to);
    TW_ASSERT_MSG(!graph_.buffers[to].producer.has_value(), "every buffer is fed by one copy");
    TransferCopy c;
    c.id = static_cast<uint32_t>(graph_.copies.size());
    c.from = from;
    c.to = to;
    c.hop = std::move(hop);
    graph_.buffers[from].consumers.push_back(c.id);
    graph_.buffers[to].producer = c.id;
    graph_.copies.push_back(std::move(c));
  }

  // Routes `from` -> `to` along find_fastest_path; memories on the way get IB
  // buffers. With `merge`, an IB already planned for the same predecessor and
  // memory is reused: that is how aggregation merges common predecessors.
  Status add_leg(uint32_t from, uint32_t to, std::map<std::pair<uint32_t, MemoryId>, uint32_t>* merge) {
    const MemoryId src = graph_.buffers[from].memory;
    const MemoryId dst = graph_.buffers[to].memory;
    std::optional<MemoryPath> path = topology_.find_fastest_path(src, dst, graph_.bytes);
    if (!path) {
      return {StatusCode::kInvalidArgument, "no path from " + src.name() + " to " + dst.name()};
    }
    if (path->hops.empty()) {
      add_copy(from, to, topology_.same_memory_hop(src));
      return {};
    }
    uint32_t at = from;
    for (size_t i = 0; i < path->hops.size(); ++i) {
      PathHop& hop = path->hops[i];
      if (i + 1 == path->hops.size()) {
        // A destination is a predecessor later legs may share (it then serves
        // as an IB buffer), like any IB buffer on the way.
        if (merge != nullptr) merge->emplace(std::pair(at, hop.to), to);
        add_copy(at, to, std::move(hop));
        break;
      }
      const auto key = std::pair(at, hop.to);
      if (merge != nullptr) {
        if (auto it = merge->find(key); it != merge->end()) {
          at = it->second;
          continue;
        }
      }
      const uint32_t ib = add_buffer(hop.to, BufferRole::kIB);
      add_copy(at, ib, std::move(hop));
      if (merge != nullptr) merge->emplace(key, ib);
      at = ib;
    }
    return {};
  }

  TransferGraph& graph() { return graph_; }
  const TransferGraph& graph() const { return graph_; }

 private:
  const ClusterTopology& topology_;
  TransferGraph graph_;
};

using MergeMap = std::map<std::pair<uint32_t, MemoryId>, uint32_t>;

// Every buffer of `targets` gets the data from `root` through aggregated paths.
// Shorter paths are planned first, so that a destination on another's path is
// merged into it (fed once, then feeding on) rather than planned beside it.
Status aggregate(GraphBuilder& b, uint32_t root, const std::vector<uint32_t>& targets,
                 const ClusterTopology& topology) {
  std::vector<std::pair<size_t, uint32_t>> by_length;
  const MemoryId from = b.graph().buffers[root].memory;
  for (uint32_t t : targets) {
    auto path = topology.find_fastest_path(from, b.graph().buffers[t].memory, b.graph().bytes);
    by_length.emplace_back(path ? path->hops.size() : 0, t);
  }
  std::stable_sort(by_length.begin(), by_length.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  MergeMap merge;
  for (const auto& [length, t] : by_length) {
    if (Status st = b.add_leg(root, t, &merge); !st.is_ok()) return st;
  }
  return {};
}

// A radix tree over `order` (order[0] already has the data): the parent of
// order[i] is order[(i - 1) / radix]. Legs from one parent share predecessors.
Status radix_tree(GraphBuilder& b, const std::vector<uint32_t>& order, uint32_t radix) {
  TW_ASSERT_MSG(radix >= 1, "validated options: a tree's radix is at least 1");
  MergeMap merge;
  for (size_t i = 1; i < order.size(); ++i) {
    if (Status st = b.add_leg(order[(i - 1) / radix], order[i], &merge); !st.is_ok()) return st;
  }
  return {};
}

// Broadcast inside one node from `root` to `targets`, by intra-node radix.
Status intra_node(GraphBuilder& b, uint32_t root, const std::vector<uint32_t>& targets,
                  uint32_t radix_intra, const ClusterTopology& topology) {
  if (targets.empty()) return {};
  if (radix_intra == 0) return aggregate(b, root, targets, topology);
  // A destination in the root's own memory is a copy in place from the root:
  // as a vertex of a tree it would only read the same memory a second time.
  // The rest: CPU and GPU destinations apart.
  const MemoryId root_memory = b.graph().buffers[root].memory;
  std::vector<uint32_t> cpu;
  std::vector<uint32_t> gpu;
  for (uint32_t t : targets) {
    const MemoryId m = b.graph().buffers[t].memory;
    if (m == root_memory) {
      if (Status st = b.add_leg(root, t, nullptr); !st.is_ok()) return st;
      continue;
    }
    (m.is_host() ? cpu : gpu).push_back(t);
  }
  for (const std::vector<uint32_t>* group : {&cpu, &gpu}) {
    if (group->empty()) continue;
    if (radix_intra == 1) {
      // Split: the root feeds the group's head, the head the rest by aggregation.
      if (Status st = b.add_leg(root, group->front(), nullptr); !st.is_ok()) return st;
      std::vector<uint32_t> rest(group->begin() + 1, group->end());
      if (Status st = aggregate(b, group->front(), rest, topology); !st.is_ok()) return st;
    } else {
      // A radix tree per group, rooted at the node's entry buffer.
      std::vector<uint32_t> order{root};
      order.insert(order.end(), group->begin(), group->end());
      if (Status st = radix_tree(b, order, radix_intra); !st.is_ok()) return st;
    }
  }
  return {};
}

// Destinations by node, and the entry buffer of each node: the source on its
// node; elsewhere the first destination the NIC can reach directly, else the
// first destination. `entries` starts with the source, then by node number.
struct NodeEntries {
  std::map<uint32_t, std::vector<uint32_t>> by_node;  // destinations, in the order given
  std::vector<uint32_t> entries;
  std::map<uint32_t, uint32_t> entry_of;

  // The destinations of `node` other than its entry.
  std::vector<uint32_t> rest_of(uint32_t node) const {
    std::vector<uint32_t> rest;
    for (uint32_t d : by_node.at(node)) {
      if (d != entry_of.at(node)) rest.push_back(d);
    }
    return rest;
  }
};

NodeEntries node_entries(GraphBuilder& b, uint32_t source, const std::vector<uint32_t>& dests,
                         const ClusterTopology& topology) {
  NodeEntries e;
  const uint32_t source_node = b.graph().buffers[source].memory.node;
  for (uint32_t d : dests) e.by_node[b.graph().buffers[d].memory.node].push_back(d);
  e.entries.push_back(source);
  e.entry_of[source_node] = source;
  for (auto& [node, list] : e.by_node) {
    if (node == source_node) continue;
    uint32_t entry = list.front();
    for (uint32_t d : list) {
      if (is_nic_reachable(topology.kind_of(b.graph().buffers[d].memory))) {
        entry = d;
        break;
      }
    }
    e.entries.push_back(entry);
    e.entry_of[node] = entry;
  }
  return e;
}

Status plan_radix_tree(GraphBuilder& b, uint32_t source, const std::vector<uint32_t>& dests,
                       const ClusterTopology& topology, const BroadcastOptions& o) {
  const NodeEntries e = node_entries(b, source, dests, topology);
  Status st = o.radix_inter == 1
                  ? aggregate(b, source, std::vector<uint32_t>(e.entries.begin() + 1, e.entries.end()),
                              topology)
                  : radix_tree(b, e.entries, o.radix_inter);
  if (!st.is_ok()) return st;
  for (const auto& [node, list] : e.by_node) {
    if (Status s = intra_node(b, e.entry_of.at(node), e.rest_of(node), o.radix_intra, topology);
        !s.is_ok()) {
      return s;
    }
  }
  return {};
}

// The host memory of `node` as the chain's stage there: a new IB ring, so
// that no destination instance needs registering for the network (the
// simulator charges registration per page on the rank's CPU before the
// pipeline can start: 16 ms for 1 GiB), fed by `from` along the fastest path.
Result<uint32_t> host_stage(GraphBuilder& b, uint32_t from, uint32_t node,
                            const ClusterTopology& topology) {
  const MemoryId host = MemoryId::host(node);
  const MemoryId at = b.graph().buffers[from].memory;
  std::optional<MemoryPath> path = topology.find_fastest_path(at, host, b.graph().bytes);
  if (!path || path->hops.size() != 1) {
    return Status(StatusCode::kInvalidArgument,
                  "chain: no direct hop from " + at.name() + " to " + host.name());
  }
  const uint32_t ib = b.add_buffer(host, BufferRole::kIB);
  b.add_copy(from, ib, std::move(path->hops.front()));
  return ib;
}

// Within one node, from its stage: a chain over NVLink (each hop one engine,
// at NVLink speed); over PCIe a GPU-to-GPU hop passes host memory on two
// engines, so a chain would load every middle GPU's engine twice: there the
// host stage feeds each GPU on its own engine (aggregation), so that every
// engine carries the payload once.
Status chain_within_node(GraphBuilder& b, uint32_t stage, const std::vector<uint32_t>& dests,
                         const ClusterTopology& topology) {
  if (dests.empty()) return {};
  if (topology.cluster().nvlink_bandwidth_bytes_per_s <= 0) return aggregate(b, stage, dests, topology);
  std::vector<uint32_t> order{stage};
  order.insert(order.end(), dests.begin(), dests.end());
  return radix_tree(b, order, 1);
}

// The pipelined chain: one host IB ring per node as its stage, the stages in
// one chain over the network (the source's node first, then by node number:
// the switch is uniform, any order loads every NIC port once), each hop
// forwarding chunk k while it receives chunk k+1; each stage feeds its node's
// destinations. A destination in the source's own memory closes the chain
// into a ring (fed by the last stage over the network): a local copy would put
// the payload on the source GPU's engine a second time. Every link carries the
// payload about once, so the slowest link stays busy.
Status plan_chain(GraphBuilder& b, uint32_t source, const std::vector<uint32_t>& dests,
                  const ClusterTopology& topology) {
  const MemoryId source_memory = b.graph().buffers[source].memory;
  std::map<uint32_t, std::vector<uint32_t>> by_node;
  for (uint32_t d : dests) by_node[b.graph().buffers[d].memory.node].push_back(d);
  std::vector<uint32_t> order{source_memory.node};  // the source's node leads
  for (const auto& [node, list] : by_node) {
    if (node != source_memory.node) order.push_back(node);
  }
  std::optional<uint32_t> previous;
  std::optional<uint32_t> closing;
  std::vector<std::pair<uint32_t, uint32_t>> stages;  // node, its stage
  for (uint32_t node : order) {
    std::vector<uint32_t>& list = by_node[node];
    uint32_t stage = source;
    if (!source_memory.is_host() || node != source_memory.node) {
      Result<uint32_t> made = host_stage(b, node == source_memory.node ? source : *previous, node, topology);
      if (!made) return made.status();
      stage = *made;
    }
    if (node == source_memory.node && order.size() > 1) {
      for (uint32_t d : list) {
        if (!closing && b.graph().buffers[d].memory == source_memory &&
            is_nic_reachable(topology.kind_of(source_memory))) {
          closing = d;
        }
      }
      if (closing) std::erase(list, *closing);
    }
    stages.emplace_back(node, stage);
    previous = stage;
  }
  if (closing) {
    if (Status st = b.add_leg(*previous, *closing, nullptr); !st.is_ok()) return st;
  }
  for (const auto& [node, stage] : stages) {
    if (Status st = chain_within_node(b, stage, by_node[node], topology); !st.is_ok()) return st;
  }
  return {};
}

// Sizes every IB ring: min(bytes, ib_buffer_max), shrunk (to whole min_chunks)
// until a memory's IB buffers fit its pool together.
Status size_ib_buffers(TransferGraph& g, const BroadcastOptions& o) {
  std::map<MemoryId, uint64_t> count;
  for (const TransferBuffer& b : g.buffers) {
    if (b.role == BufferRole::kIB) ++count[b.memory];
  }
  const uint64_t wanted = std::min(g.bytes, o.ib_buffer_max_bytes);
  for (TransferBuffer& b : g.buffers) {
    if (b.role != BufferRole::kIB) {
      b.ring_bytes = g.bytes;
      continue;
    }
    uint64_t size = wanted;
    const uint64_t n = count[b.memory];
    TW_ASSERT(n >= 1);  // b itself is one of them
    if (size > o.ib_pool_bytes / n) {
      size = o.ib_pool_bytes / n / o.min_chunk_bytes * o.min_chunk_bytes;
      if (size == 0) {
        return {StatusCode::kOutOfMemory,
                "the IB pool of " + b.memory.name() + " (" + std::to_string(o.ib_pool_bytes) +
                    " bytes) cannot hold its " + std::to_string(n) + " IB buffers of at least " +
                    std::to_string(o.min_chunk_bytes) + " bytes each"};
      }
    }
    // Empty rings only for an empty broadcast; together they fit the pool.
    TW_ASSERT((size > 0 || g.bytes == 0) && size <= g.bytes);
    TW_ASSERT_MSG(size * n <= o.ib_pool_bytes, "a memory's IB rings fit its pool");
    b.ring_bytes = size;
  }
  return {};
}

}  // namespace

Result<TransferGraph> plan_broadcast(const ClusterTopology& topology, MemoryId source,
                                     const std::vector<MemoryId>& destinations, uint64_t bytes,
                                     const BroadcastOptions& options) {
  if (std::string why = validate_broadcast_options(options); !why.empty()) {
    return Status(StatusCode::kInvalidArgument, why);
  }
  if (!topology.contains(source)) {
    return Status(StatusCode::kInvalidArgument, "the source " + source.name() + " is not in the cluster");
  }
  for (const MemoryId& d : destinations) {
    if (!topology.contains(d)) {
      return Status(StatusCode::kInvalidArgument, "destination " + d.name() + " is not in the cluster");
    }
  }
  GraphBuilder b(topology, bytes);
  const uint32_t src = b.add_buffer(source, BufferRole::kSource);
  std::vector<uint32_t> dests;
  for (const MemoryId& d : destinations) dests.push_back(b.add_buffer(d, BufferRole::kDestination));
  b.graph().source = src;
  b.graph().destinations = dests;

  Status st;
  switch (options.algorithm) {
    case BroadcastAlgorithm::kNaive:
      for (uint32_t d : dests) {
        if (st = b.add_leg(src, d, nullptr); !st.is_ok()) break;
      }
      break;
    case BroadcastAlgorithm::kAggregation:
      st = aggregate(b, src, dests, topology);
      break;
    case BroadcastAlgorithm::kRadixTree:
      st = plan_radix_tree(b, src, dests, topology, options);
      break;
    case BroadcastAlgorithm::kChain:
      st = plan_chain(b, src, dests, topology);
      break;
  }
  if (!st.is_ok()) return st;
  if (st = size_ib_buffers(b.graph(), options); !st.is_ok()) return st;
  // Any options and memories accepted above give a well-formed graph: one
  // that does not is a bug of the planner, not of its input.
  TW_ASSERT_MSG(b.graph().validate().empty(), "the planner built a malformed transfer graph");
  return std::move(b.graph());
}

}  // namespace tensorwire::collectives
