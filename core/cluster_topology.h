// How the cluster's nodes are cabled ([cluster] topology). "star": every NIC
// on one non-blocking switch, the model the simulator always had. "leaf_spine":
// leaves of `leaf_nodes` nodes, each leaf cabled to each of `spines` spines by
// one link whose bandwidth is leaf_nodes * nic_bandwidth / (spines *
// oversubscription), so a leaf's uplinks together carry 1/oversubscription of
// what its nodes can send. "rail": rail-optimised, `rails` NICs per node (one
// per GPU), NIC i of every node on rail switch i; a queue pair lives on one
// NIC, the same rail at both ends. docs/TOPOLOGIES.md has the pictures.
#pragma once

#include <cstdint>

#include "core/clock.h"

namespace tensorwire {

enum class TopologyKind : uint8_t { kStar, kLeafSpine, kRail };

// "star", "leaf_spine", "rail".
const char* topology_kind_name(TopologyKind kind);

struct ClusterTopology {
  TopologyKind kind = TopologyKind::kStar;
  // leaf_spine: nodes per leaf (dividing the cluster's nodes), spines, and
  // the ratio of a leaf's NIC bandwidth to its uplink bandwidth (>= 1).
  uint32_t leaf_nodes = 0;
  uint32_t spines = 0;
  double oversubscription = 1.0;
  // leaf_spine: one way over one leaf-spine link; a route between leaves
  // crosses two (up and down), added to the NIC's latency.
  TimeNs link_latency_ns = 0;
  // rail: NICs per node, and rail switches.
  uint32_t rails = 0;
};

}  // namespace tensorwire
