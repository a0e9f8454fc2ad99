// The fabric as a Graphviz DOT graph (`tensorwire topology SCENARIO --dot`):
// nodes, their NICs, the switches and every cable, each cable labelled with
// its bandwidth per direction. `dot -Tsvg` draws it (docs/TOPOLOGIES.md).
#pragma once

#include <string>

#include "core/cluster.h"

namespace tensorwire::sim {

// An undirected DOT graph named `title` of the cluster's topology.
std::string fabric_dot(const Cluster& cluster, const std::string& title);

}  // namespace tensorwire::sim
