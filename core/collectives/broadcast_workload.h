// A broadcast as a scenario asks for it: one source instance copied to many
// destination instances, with the planner's options.
#pragma once

#include <cstdint>
#include <vector>

#include "core/collectives/broadcast_planner.h"
#include "core/collectives/cluster_topology.h"

namespace tensorwire::collectives {

struct BroadcastWorkload {
  MemoryId source;
  std::vector<MemoryId> destinations;  // one instance each; a memory may repeat
  uint64_t bytes = 0;
  BroadcastOptions options;
};

}  // namespace tensorwire::collectives
