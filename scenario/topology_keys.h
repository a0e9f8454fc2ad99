// [cluster] topology and its keys (core/cluster_topology.h):
//
//   topology = "star"          # the default: one non-blocking switch
//   topology = "leaf_spine"    # leaf_nodes = 4, spines = 2, oversubscription = 2,
//                              # link_latency = "500ns" (each leaf-spine link)
//   topology = "rail"          # rails = 4 (default: gpus_per_node)
//
// Every mistake is a ScenarioError naming file:line and the key: an unknown
// topology, leaf_nodes not dividing nodes, no spines, an oversubscription
// below 1, a key of another topology than the one named.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/cluster_topology.h"
#include "scenario/toml_table_reader.h"

namespace tensorwire {

// The [cluster] keys the topology reads (besides "topology" itself).
inline constexpr std::string_view kTopologyKeys[] = {"topology", "leaf_nodes", "spines",
                                                     "oversubscription", "link_latency", "rails"};

// The topology the [cluster] table `cluster` describes for `nodes` nodes of
// `gpus_per_node` GPUs each.
ClusterTopology read_topology_keys(const TomlTableReader& cluster, uint32_t nodes,
                                   uint32_t gpus_per_node);

}  // namespace tensorwire
