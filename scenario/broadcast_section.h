// The [workload] table of kind "broadcast": Realm's collective broadcast copy.
//   bytes = "1GiB"; source = "node0/gpu0"
//   destinations = ["node1/gpu0", "node2/host"] or "all_gpus" / "all_hosts" / "all"
//   algorithm = "radix_tree" (or 2; "naive" 0, "aggregation" 1)
//   radix_inter = 2 (1: inter-node aggregation); radix_intra = 2 (0: aggregation, 1: split)
//   ib_buffer_size = "16MiB"; ib_pool_size = "256MiB"; min_chunk = "4KiB"; max_chunk = "1MiB"
//   max_inflight_chunks = 4
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>

#include "core/cluster.h"
#include "core/protocols/realm_broadcast/broadcast_workload.h"
#include "core/status.h"

namespace tensorwire {

collectives::BroadcastWorkload parse_broadcast_section(const toml::table& table,
                                                       const std::string& file,
                                                       const Cluster& cluster,
                                                       bool payload);

// "node3/gpu1" or "node3/host" within the cluster; an error says what is wrong.
Result<collectives::MemoryId> parse_memory_id(std::string_view spec,
                                              const Cluster& cluster);

}  // namespace tensorwire
