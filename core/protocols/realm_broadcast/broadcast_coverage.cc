#include "core/protocols/realm_broadcast/broadcast_coverage.h"

#include <iterator>

#include "core/assert.h"

namespace tensorwire::collectives {
namespace {

constexpr const char* kPathNames[] = {
    "algorithm naive",
    "algorithm aggregation",
    "algorithm radix_tree",
    "algorithm chain",
    "chunk written over the network",
    "chunk copied on the node",
    "IB buffer in host memory",
    "IB buffer in GPU memory",
    "several IB buffers in one memory",
    "IB buffer with several consumers",
    "IB buffer reference dropped while others read it",
    "IB buffer freed (reference count zero)",
    "IB ring wrapped around",
    "producer waited for room (flow control)",
    "producer held back below min_chunk",
    "copy at max_inflight_chunks",
    "destination forwards to others (entry buffer)",
    "post queued: send queue full",
    "rank failed with an error",
};
static_assert(std::size(kPathNames) == kBroadcastPaths, "every path has a name");

constexpr const char* kMessageNames[] = {"IB_READY", "BYTES_READ", "ABORT", "WINDOW_READY"};
static_assert(std::size(kMessageNames) == kBroadcastMessageTypes);

size_t message_index(CollectiveMessageType type) {
  const auto raw = static_cast<size_t>(type);
  TW_ASSERT_MSG(raw >= 1 && raw <= kBroadcastMessageTypes, "a collective message of a known type");
  return raw - 1;
}

}  // namespace

void BroadcastCoverageCounts::count_sent(CollectiveMessageType type) { ++sent[message_index(type)]; }

void BroadcastCoverageCounts::count_received(CollectiveMessageType type) {
  ++received[message_index(type)];
}

void BroadcastCoverageCounts::add(const BroadcastCoverageCounts& other) {
  for (size_t i = 0; i < kBroadcastMessageTypes; ++i) {
    sent[i] += other.sent[i];
    received[i] += other.received[i];
  }
  for (size_t i = 0; i < kBroadcastPaths; ++i) paths[i] += other.paths[i];
}

BroadcastPath algorithm_path(BroadcastAlgorithm algorithm) {
  switch (algorithm) {
    case BroadcastAlgorithm::kNaive:
      return BroadcastPath::kAlgorithmNaive;
    case BroadcastAlgorithm::kAggregation:
      return BroadcastPath::kAlgorithmAggregation;
    case BroadcastAlgorithm::kRadixTree:
      return BroadcastPath::kAlgorithmRadixTree;
    case BroadcastAlgorithm::kChain:
      return BroadcastPath::kAlgorithmChain;
  }
  TW_UNREACHABLE("a broadcast algorithm of no known kind");
}

Coverage broadcast_declared_coverage() {
  Coverage c;
  for (const char* name : kMessageNames) c.declare(kCoverageMessagesSent, name);
  for (const char* name : kMessageNames) c.declare(kCoverageMessagesReceived, name);
  for (const char* name : kPathNames) c.declare(kCoveragePaths, name);
  return c;
}

Coverage broadcast_coverage(const BroadcastCoverageCounts& counts) {
  Coverage c = broadcast_declared_coverage();
  for (size_t i = 0; i < kBroadcastMessageTypes; ++i) {
    c.count(kCoverageMessagesSent, kMessageNames[i], counts.sent[i]);
    c.count(kCoverageMessagesReceived, kMessageNames[i], counts.received[i]);
  }
  for (size_t i = 0; i < kBroadcastPaths; ++i) c.count(kCoveragePaths, kPathNames[i], counts.paths[i]);
  return c;
}

}  // namespace tensorwire::collectives
