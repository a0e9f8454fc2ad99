#include "backend_sim/fabric_dot.h"

#include <cmath>
#include <sstream>

#include "backend_sim/fabric.h"
#include "core/assert.h"

namespace tensorwire::sim {
namespace {

// "100 Gbps", "50 Gbps", "33.3 Gbps": what a cable carries per direction.
std::string gbps(double bytes_per_s) {
  const double g = bytes_per_s * 8 / 1e9;
  std::ostringstream s;
  s.precision(g == std::round(g) ? 0 : 1);
  s << std::fixed << g << " Gbps";
  return s.str();
}

void star(std::ostringstream& out, const Cluster& c) {
  out << "  switch [shape=ellipse, style=filled, fillcolor=lightgrey];\n";
  for (uint32_t n = 0; n < c.nodes; ++n) {
    out << "  switch -- node" << n << " [label=\"" << gbps(c.nic_bandwidth_bytes_per_s) << "\"];\n";
  }
}

void leaf_spine(std::ostringstream& out, const Cluster& c, const Fabric& f) {
  const ClusterTopology& t = c.topology;
  out << "  { rank=same;";
  for (uint32_t s = 0; s < t.spines; ++s) out << " spine" << s << ";";
  out << " }\n  { rank=same;";
  for (uint32_t l = 0; l < f.leaves(); ++l) out << " leaf" << l << ";";
  out << " }\n";
  for (uint32_t s = 0; s < t.spines; ++s) {
    out << "  spine" << s << " [shape=ellipse, style=filled, fillcolor=lightblue];\n";
  }
  const std::string uplink = gbps(f.capacity(f.uplink(0, 0)));
  for (uint32_t l = 0; l < f.leaves(); ++l) {
    out << "  leaf" << l << " [shape=ellipse, style=filled, fillcolor=lightgrey];\n";
    for (uint32_t s = 0; s < t.spines; ++s) {
      out << "  spine" << s << " -- leaf" << l << " [label=\"" << uplink << "\", penwidth=2];\n";
    }
  }
  for (uint32_t n = 0; n < c.nodes; ++n) {
    out << "  leaf" << f.leaf_of(n) << " -- node" << n << " [label=\""
        << gbps(c.nic_bandwidth_bytes_per_s) << "\"];\n";
  }
}

// Rail switches on top, each node a box of its NICs (one per GPU) below,
// NIC i cabled to rail switch i; every cable is one NIC's, so the graph's
// label gives the bandwidth.
void rail(std::ostringstream& out, const Cluster& c, const Fabric& f) {
  out << "  ranksep=1.5;\n  ordering=out;\n  { rank=same;";
  for (uint32_t r = 0; r < f.nics_per_node(); ++r) out << " rail" << r << ";";
  out << " }\n  { rank=same;";
  for (uint32_t n = 0; n < c.nodes; ++n) out << " node" << n << ";";
  out << " }\n";
  for (uint32_t r = 0; r < f.nics_per_node(); ++r) {
    out << "  rail" << r << " [label=\"rail switch " << r
        << "\", shape=ellipse, style=filled, fillcolor=lightgrey];\n";
  }
  for (uint32_t n = 0; n < c.nodes; ++n) {
    out << "  node" << n << " [shape=record, label=\"{";
    for (uint32_t r = 0; r < f.nics_per_node(); ++r) {
      out << (r == 0 ? "{" : "|") << "<nic" << r << "> nic" << r;
    }
    out << "}|node" << n << "}\"];\n";
  }
  for (uint32_t r = 0; r < f.nics_per_node(); ++r) {
    for (uint32_t n = 0; n < c.nodes; ++n) out << "  rail" << r << " -- node" << n << ":nic" << r << ":n;\n";
  }
}

}  // namespace

std::string fabric_dot(const Cluster& cluster, const std::string& title) {
  const Fabric fabric(cluster);
  const ClusterTopology& t = cluster.topology;
  std::ostringstream out;
  out << "graph \"" << title << "\" {\n  label=\"" << title << ": " << topology_kind_name(t.kind)
      << ", " << cluster.nodes << " nodes";
  if (t.kind == TopologyKind::kLeafSpine) {
    out << ", " << fabric.leaves() << " leaves of " << t.leaf_nodes << ", " << t.spines
        << " spines, " << t.oversubscription << ":1 oversubscribed";
  }
  if (t.kind == TopologyKind::kRail) {
    out << ", " << t.rails << " rails, every cable " << gbps(cluster.nic_bandwidth_bytes_per_s);
  }
  out << "\";\n  node [shape=box, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=9];\n";
  switch (t.kind) {
    case TopologyKind::kStar: star(out, cluster); break;
    case TopologyKind::kLeafSpine: leaf_spine(out, cluster, fabric); break;
    case TopologyKind::kRail: rail(out, cluster, fabric); break;
  }
  out << "}\n";
  TW_ASSERT(!out.str().empty());
  return out.str();
}

}  // namespace tensorwire::sim
