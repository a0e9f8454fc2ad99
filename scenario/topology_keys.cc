#include "scenario/topology_keys.h"

#include <cmath>
#include <string>

#include "scenario/scenario_limits.h"

namespace tensorwire {
namespace {

namespace limits = scenario_limits;

// A spine count or a ratio past these is a typo, not a cluster.
constexpr int64_t kMaxSpines = 1024;
constexpr double kMaxOversubscription = 1024;

TopologyKind kind_of(const TomlTableReader& r) {
  const std::optional<std::string> name = r.string("topology");
  if (!name) return TopologyKind::kStar;
  for (TopologyKind k : {TopologyKind::kStar, TopologyKind::kLeafSpine, TopologyKind::kRail}) {
    if (*name == topology_kind_name(k)) return k;
  }
  r.fail("topology", "unknown topology '" + *name +
                         "' (use \"star\", \"leaf_spine\" or \"rail\")");
}

// A key of one topology given for another is a mistake, not a no-op.
void reject_keys_of_other_topologies(const TomlTableReader& r, TopologyKind kind) {
  const std::string named = std::string("this cluster's topology is \"") +
                            topology_kind_name(kind) + "\"";
  for (std::string_view key : {"leaf_nodes", "spines", "oversubscription", "link_latency"}) {
    if (kind != TopologyKind::kLeafSpine && r.has(key)) {
      r.fail(key, "is a key of topology = \"leaf_spine\"; " + named);
    }
  }
  if (kind != TopologyKind::kRail && r.has("rails")) {
    r.fail("rails", "is a key of topology = \"rail\"; " + named);
  }
}

double read_oversubscription(const TomlTableReader& r) {
  const toml::node* node = r.get("oversubscription");
  if (node == nullptr) return 1.0;
  const std::optional<double> ratio = node->value<double>();
  if (!ratio) {
    r.fail("oversubscription",
           std::string("expected a number (2 for 2:1), found ") + toml_type_name(*node));
  }
  if (!std::isfinite(*ratio) || *ratio < 1 || *ratio > kMaxOversubscription) {
    r.fail("oversubscription", "must be a ratio from 1 (non-blocking) to " +
                                   std::to_string(static_cast<int>(kMaxOversubscription)) +
                                   " (leaf NIC bandwidth : leaf uplink bandwidth)");
  }
  return *ratio;
}

void read_leaf_spine(const TomlTableReader& r, uint32_t nodes, ClusterTopology& t) {
  t.leaf_nodes = static_cast<uint32_t>(
      r.required(r.integer("leaf_nodes", 1, limits::kMaxNodes), "leaf_nodes"));
  if (nodes % t.leaf_nodes != 0) {
    r.fail("leaf_nodes", std::to_string(t.leaf_nodes) + " nodes per leaf do not divide the cluster's " +
                             std::to_string(nodes) + " nodes");
  }
  const int64_t spines = r.required(r.integer("spines", 0, kMaxSpines), "spines");
  if (spines == 0) r.fail("spines", "a leaf_spine topology needs at least one spine");
  t.spines = static_cast<uint32_t>(spines);
  t.oversubscription = read_oversubscription(r);
  t.link_latency_ns = r.duration("link_latency", limits::kMaxDurationNs).value_or(0);
}

}  // namespace

ClusterTopology read_topology_keys(const TomlTableReader& r, uint32_t nodes,
                                   uint32_t gpus_per_node) {
  ClusterTopology t;
  t.kind = kind_of(r);
  reject_keys_of_other_topologies(r, t.kind);
  if (t.kind == TopologyKind::kLeafSpine) read_leaf_spine(r, nodes, t);
  if (t.kind == TopologyKind::kRail) {
    const int64_t rails = r.integer("rails", 0, limits::kMaxGpusPerNode).value_or(gpus_per_node);
    if (rails == 0) {
      r.fail(r.has("rails") ? "rails" : "topology",
             "a rail topology needs at least one rail (rails, or gpus_per_node: one NIC per GPU)");
    }
    t.rails = static_cast<uint32_t>(rails);
  }
  return t;
}

}  // namespace tensorwire
