// Broadcast planners: one source instance to many destination instances, as a
// transfer graph. The three algorithms and their options are Realm's
// (-ll:coll_copy_algo, -ll:coll_copy_radix_inter, -ll:coll_copy_radix_intra).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/protocols/realm_broadcast/cluster_topology.h"
#include "core/protocols/realm_broadcast/transfer_graph.h"
#include "core/status.h"

namespace tensorwire::collectives {

enum class BroadcastAlgorithm : uint32_t {
  kNaive = 0,        // find_fastest_path to each destination, paths side by side
  kAggregation = 1,  // the same paths with common predecessors merged
  kRadixTree = 2,    // entry buffer per node, radix tree across nodes, then intra-node
  // Entry buffer per node, the entries in one chain across the nodes (each
  // forwards chunk k while it receives chunk k+1), then within each node a
  // chain over NVLink, else one host IB buffer feeding every GPU on its own
  // copy engine; a destination in the source's own memory closes the chain
  // into a ring: every link carries the payload about once.
  kChain = 3,
};
inline constexpr uint32_t kBroadcastAlgorithms = 4;

const char* broadcast_algorithm_name(BroadcastAlgorithm algorithm);

struct BroadcastOptions {
  BroadcastAlgorithm algorithm = BroadcastAlgorithm::kRadixTree;
  // Inter-node radix; 1 means inter-node 1-to-n aggregation.
  uint32_t radix_inter = 2;
  // Intra-node radix; 0 means intra-node aggregation, 1 intra-node split (CPU
  // and GPU destinations apart, each group by aggregation from its head).
  uint32_t radix_intra = 2;
  uint64_t ib_buffer_max_bytes = 16ull << 20;  // Realm caps an IB buffer at 16 MiB
  uint64_t ib_pool_bytes = 256ull << 20;       // per memory
  // A stage forwards once its input holds at least this much (or the rest).
  uint64_t min_chunk_bytes = 4096;
  // And moves at most this much per copy it issues.
  uint64_t max_chunk_bytes = 1ull << 20;
  // Chunks one copy may have in flight at once.
  uint32_t max_inflight_chunks = 4;
  // 0: an instance the network writes into is registered whole before the
  // broadcast starts (Realm). Else a larger one is registered in windows of
  // this many bytes, two ahead of the bytes landed, each announced by
  // WINDOW_READY: registering 1 GiB costs the receiver's CPU about 16 ms, which
  // the windows overlap with the stream instead of putting it first.
  uint64_t registration_window_bytes = 0;
};

// "" when the options are usable, else what is wrong.
std::string validate_broadcast_options(const BroadcastOptions& options);

// Plans the broadcast of `bytes` from `source` to `destinations` (distinct
// instances; several may share a memory, also with the source). IB buffers are
// sized min(bytes, ib_buffer_max_bytes), shrunk so that each memory's IB
// buffers fit its pool; an error when even min_chunk_bytes each would not fit.
Result<TransferGraph> plan_broadcast(const ClusterTopology& topology, MemoryId source,
                                     const std::vector<MemoryId>& destinations, uint64_t bytes,
                                     const BroadcastOptions& options);

}  // namespace tensorwire::collectives
