// A broadcast as a scenario asks for it: one source instance copied to many
// destination instances, with the planner's options. Read from the scenario's
// [workload] table (kind = "broadcast"):
//   bytes = "1GiB"; source = "node0/gpu0"
//   destinations = ["node1/gpu0", "node2/host"] or "all_gpus" / "all_hosts" / "all"
//   algorithm = "radix_tree" (or 2; "naive" 0, "aggregation" 1)
//   radix_inter = 2 (1: inter-node aggregation); radix_intra = 2 (0: aggregation, 1: split)
//   ib_buffer_size = "16MiB"; ib_pool_size = "256MiB"; min_chunk = "4KiB"; max_chunk = "1MiB"
//   max_inflight_chunks = 4
#pragma once

#include <any>
#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/collective.h"
#include "core/option_reader.h"
#include "core/protocols/realm_broadcast/broadcast_planner.h"
#include "core/protocols/realm_broadcast/cluster_topology.h"
#include "core/status.h"

namespace tensorwire::collectives {

struct BroadcastWorkload {
  MemoryId source;
  std::vector<MemoryId> destinations;  // one instance each; a memory may repeat
  uint64_t bytes = 0;
  BroadcastOptions options;
};

// The [workload] keys beside "kind".
std::vector<std::string_view> broadcast_workload_keys();

// Reads and checks the [workload] table, and plans it, so that a plan the IB
// pools cannot hold, or one payload mode cannot hold in memory, is an error
// in the file.
BroadcastWorkload read_broadcast_workload(const OptionReader& reader, const Cluster& cluster,
                                          const CollectiveWorkloadLimits& limits);

// "node3/gpu1" or "node3/host" within the cluster; an error says what is wrong.
Result<MemoryId> parse_memory_id(std::string_view spec, const Cluster& cluster);

// What a payload-mode run holds on each node (instances and IB buffers), by
// node: what the loader checks against its per-node bound, and, summed, the
// estimate made before a run (CollectiveProtocol::payload_bytes).
std::map<uint32_t, uint64_t> broadcast_payload_bytes_by_node(const BroadcastWorkload& w,
                                                             const Cluster& cluster);

// The workload inside a CollectiveRequest's std::any (asserts the type).
const BroadcastWorkload& workload_of(const std::any& workload);

}  // namespace tensorwire::collectives
