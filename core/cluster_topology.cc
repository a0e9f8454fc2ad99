#include "core/cluster_topology.h"

namespace tensorwire {

const char* topology_kind_name(TopologyKind kind) {
  switch (kind) {
    case TopologyKind::kStar: return "star";
    case TopologyKind::kLeafSpine: return "leaf_spine";
    case TopologyKind::kRail: return "rail";
  }
  return "?";
}

}  // namespace tensorwire
