// What Realm's collective broadcast declares worth reaching (core/coverage.h):
// its four control message types sent and received, and the paths through it:
// the four algorithms (tree shapes and the chain), network and local chunks, IB buffers in
// host and GPU memory, several in one memory, several consumers of one,
// reference counts dropping and reaching zero, rings wrapping, the pipelined
// flow control's waits, entry buffers that forward, back-pressure and errors.
// It has no state-machine tables: a copy's progress is counters, not states.
// Each rank's TransferOperation counts into a BroadcastCoverageCounts (arrays,
// cheap on the hot path); the names are made once the run is over.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/coverage.h"
#include "core/protocols/realm_broadcast/broadcast_planner.h"
#include "core/protocols/realm_broadcast/collective_message.h"

namespace tensorwire::collectives {

enum class BroadcastPath : uint8_t {
  kAlgorithmNaive,
  kAlgorithmAggregation,
  kAlgorithmRadixTree,
  kAlgorithmChain,
  kNetworkChunk,            // a chunk moved by RDMA write with immediate
  kLocalChunk,              // a chunk moved by a copy engine on the node
  kIbBufferInHost,          // an IB buffer placed in host memory
  kIbBufferInGpu,           // an IB buffer placed in GPU memory
  kSeveralIbBuffersInMemory,// one memory's IB pool holds more than one IB buffer
  kIbBufferSeveralConsumers,// an IB buffer read by more than one copy
  kIbReferenceDropped,      // a consumer finished, others still hold the IB buffer
  kIbBufferFreed,           // the last consumer finished: reference count zero, freed
  kRingWrapped,             // a chunk written into an IB ring at a reused position
  kWaitedForRoom,           // a producer had input but no room downstream (flow control)
  kHeldForMinChunk,         // a producer held back less than min_chunk
  kInflightLimit,           // a copy stopped at max_inflight_chunks
  kEntryBufferForwards,     // a destination instance feeds further copies
  kPostQueued,              // the send queue was full: a post waited in the pending queue
  kRankFailed,              // a rank's operation failed with an error
  kCount,
};
inline constexpr size_t kBroadcastPaths = static_cast<size_t>(BroadcastPath::kCount);
inline constexpr size_t kBroadcastMessageTypes = 4;  // CollectiveMessageType, by value - 1

struct BroadcastCoverageCounts {
  std::array<uint64_t, kBroadcastMessageTypes> sent{};
  std::array<uint64_t, kBroadcastMessageTypes> received{};
  std::array<uint64_t, kBroadcastPaths> paths{};

  void count(BroadcastPath path) { ++paths[static_cast<size_t>(path)]; }
  void count_sent(CollectiveMessageType type);
  void count_received(CollectiveMessageType type);
  void add(const BroadcastCoverageCounts& other);
};

BroadcastPath algorithm_path(BroadcastAlgorithm algorithm);

// Every item at 0 (the broadcast has no options that change what it does).
Coverage broadcast_declared_coverage();
// The declaration with `counts` added.
Coverage broadcast_coverage(const BroadcastCoverageCounts& counts);

}  // namespace tensorwire::collectives
