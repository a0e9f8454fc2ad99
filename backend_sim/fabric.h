// The network the cluster's topology cables (core/cluster_topology.h), as the
// resources flows share: each NIC's transmit and receive side, and each
// direction of each switch-to-switch link. A flow's route is the list of
// resources it crosses; FairSharePorts shares every one of them max-min.
//
//   star        tx(src), rx(dst): one non-blocking switch, as always.
//   leaf_spine  the same within a leaf; between leaves
//               tx(src), up(leaf(src), spine), down(spine, leaf(dst)), rx(dst),
//               the spine a hash of the flow's (src, dst): deterministic ECMP.
//   rail        tx(src, rail), rx(dst, rail): a queue pair lives on one NIC,
//               the same rail at both ends (a rail switch cables only NIC i
//               of every node), the rail a hash of the pair.
//
// Resource numbers: NIC transmit sides first (node by node, NIC by NIC), then
// receive sides, then links (every leaf's uplinks, then every leaf's
// downlinks), so a star's are node n's tx = n and rx = nodes + n.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/resource_usage.h"

namespace tensorwire::sim {

struct Route {
  static constexpr uint32_t kMaxHops = 4;
  std::array<uint32_t, kMaxHops> resources{};
  uint32_t hops = 0;
  // Latency of the route's switch-to-switch links, beyond the NIC's own.
  TimeNs link_latency_ns = 0;
  std::span<const uint32_t> resource_span() const { return {resources.data(), hops}; }
};

class Fabric {
 public:
  explicit Fabric(const Cluster& cluster);

  TopologyKind kind() const { return topology_.kind; }
  uint32_t nodes() const { return nodes_; }
  uint32_t nics_per_node() const { return nics_; }
  uint32_t resource_count() const { return static_cast<uint32_t>(capacity_.size()); }
  double capacity(uint32_t resource) const { return capacity_[resource]; }
  // "node3/nic tx", "node3/nic1 rx" (rail), "leaf0->spine1", "spine1->leaf0".
  std::string resource_name(uint32_t resource) const;
  ResourceKind resource_kind(uint32_t resource) const;
  // The node a NIC side belongs to; for a link, its leaf's first node.
  uint32_t resource_node(uint32_t resource) const;

  uint32_t tx(uint32_t node, uint32_t nic) const { return node * nics_ + nic; }
  uint32_t rx(uint32_t node, uint32_t nic) const { return (nodes_ + node) * nics_ + nic; }
  uint32_t first_link() const { return 2 * nodes_ * nics_; }
  uint32_t leaves() const { return leaves_; }
  uint32_t leaf_of(uint32_t node) const;
  uint32_t uplink(uint32_t leaf, uint32_t spine) const;
  uint32_t downlink(uint32_t spine, uint32_t leaf) const;

  // The resources a flow from src to dst crosses, in order.
  Route route(uint32_t src, uint32_t dst) const;
  // One-way latency of a message between two nodes: the NIC's plus the links'
  // (the same both ways: every spine is as far as every other).
  TimeNs latency_ns(uint32_t src, uint32_t dst) const;
  // ECMP: the spine a flow from src to dst takes (leaf_spine).
  uint32_t spine_of(uint32_t src, uint32_t dst) const;
  // The rail of the queue pair between a and b, the same from either end (rail).
  uint32_t rail_of(uint32_t a, uint32_t b) const;

 private:
  ClusterTopology topology_;
  uint32_t nodes_ = 0;
  uint32_t nics_ = 1;
  uint32_t leaves_ = 0;
  TimeNs nic_latency_ns_ = 0;
  std::vector<double> capacity_;  // per resource
};

}  // namespace tensorwire::sim
