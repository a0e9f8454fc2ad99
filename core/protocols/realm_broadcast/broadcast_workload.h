// A broadcast as a scenario asks for it: one source instance copied to many
// destination instances, with the planner's options.
#pragma once

#include <cstdint>
#include <vector>

#include "core/protocols/realm_broadcast/broadcast_planner.h"
#include "core/protocols/realm_broadcast/cluster_topology.h"

namespace tensorwire::collectives {

struct BroadcastWorkload {
  MemoryId source;
  std::vector<MemoryId> destinations;  // one instance each; a memory may repeat
  uint64_t bytes = 0;
  BroadcastOptions options;
};

}  // namespace tensorwire::collectives
