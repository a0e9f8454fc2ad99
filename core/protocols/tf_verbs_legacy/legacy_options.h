// Options of the legacy verbs protocol, set from a scenario's
// [protocol.tf_verbs_legacy] table, its bug zoo and its fixed sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/channel_peers.h"

namespace tensorwire::tf_legacy {

// Deliberate bugs for the model checker's bug zoo (tests/model), each one
// `if` where the mistake would be made. kNone everywhere else.
enum class PlantedBug : uint8_t {
  kNone,
  // The message buffer's remote side is marked idle when the write of a
  // message completes, not when the peer's ACK arrives: the next message may
  // overwrite the peer's message buffer before the peer parsed it (the raced
  // ACK behind the hangs TensorFlow users reported).
  kIdleBeforeAck,
  // A tensor buffer grows (reallocated, BUFFER_REQUEST sent) without waiting
  // for it to be idle on both sides: the old buffer is freed while the RDMA
  // write out of it is still pending.
  kReallocWhileWritePending,
};

const char* planted_bug_name(PlantedBug bug);
// "idle_before_ack", ...; false for an unknown name.
bool planted_bug_from_name(std::string_view name, PlantedBug& bug);
inline constexpr PlantedBug kPlantedBugs[] = {PlantedBug::kIdleBeforeAck,
                                              PlantedBug::kReallocWhileWritePending};

// A message buffer, an ACK buffer and a tensor-write header slot each hold
// one encoded message: the longest is 810 bytes (legacy_message.h).
inline constexpr uint64_t kMessageBufferBytes = 1024;
// The tensor buffer's content block is at least this large, so an empty or
// dead tensor's buffer is still a real registration.
inline constexpr uint64_t kMinContentBytes = 64;
inline constexpr int64_t kMaxTensorBuffersPerPeer = 4096;
inline constexpr int64_t kMaxReceivesPerPeer = 8192;

struct LegacyOptions {
  // Tensor buffers a channel may hold (one per tensor name sent to its peer):
  // the header table's slots. 256 covers ResNet-50's 161 variables.
  uint32_t tensor_buffers_per_peer = 256;
  // Receives posted per peer, each consumed by one write-with-immediate
  // (message, ACK or tensor write) and posted again once handled. At most one
  // message and one ACK are in flight, plus a write per tensor buffer.
  uint32_t receives_per_peer = 512;
  // Which peers a rank opens a channel to at start (core/channel_peers.h):
  // only the ranks the workload pairs it with, so memory grows with the
  // traffic; "all" keeps the original's channel to every rank.
  ChannelScope channels = ChannelScope::kWorkloadPeers;
  PlantedBug planted_bug = PlantedBug::kNone;
};

}  // namespace tensorwire::tf_legacy
