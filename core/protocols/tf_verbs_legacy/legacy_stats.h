// What a legacy verbs instance counts: its two state machines' transitions,
// the paths through the design (core/coverage.h names them), copies,
// registrations and the problems it survived. Messages are counted per type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/coverage.h"
#include "core/protocols/tf_verbs_legacy/legacy_message.h"
#include "core/protocols/tf_verbs_legacy/legacy_options.h"
#include "core/state_transitions.h"

namespace tensorwire::tf_legacy {

// A tensor id in a tensor buffer's queue (the sender's side): queued by a
// TENSOR_REQUEST (and still Queued while it waits for the application's
// Send: the path "Recv before Send" counts that, a state of its own would
// be one the model checker cannot reach, as every Send of a phase is made at
// its start there); deferred (the buffer was busy); waiting for
// BUFFER_RESPONSE after a (re)allocation; copying into the buffer; written;
// failed.
enum class ItemState : uint8_t {
  kQueued, kDeferred, kBufferRequested, kCopying, kWriting, kDone, kFailed,
};
// A Recv: TENSOR_REQUEST sent; copying from host staging into the GPU;
// delivered (callback ran) or failed.
enum class RecvState : uint8_t { kRequested, kCopyingOut, kDelivered, kFailed };

enum class LegacyPath : uint8_t {
  kFirstBufferRequest,  // a tensor buffer allocated for the first time: BUFFER_REQUEST
  kBufferGrows,         // a larger tensor: the buffer reallocated on both sides
  kDeferredBusy,        // the tensor buffer was busy: the tensor id went back in the queue
  kMessageWaits,        // a message waited for the message buffer (its ACK)
  kAckWaits,            // an ACK waited for the ACK buffer
  kRecvBeforeSend,      // the tensor id waited for the application's Send
  kSendBeforeRecv,      // the Send waited for TENSOR_REQUEST
  kSourceStaging,       // a GPU source copied to host, then into the tensor buffer
  kDestinationStaging,  // copied out to host, then to the GPU
  kDeadOrEmpty,         // only the header written
  kSendQueueFull,       // a post waited for room in the send queue
  kWriteForGoneRecv,    // a tensor arrived for a Recv no longer waiting (aborted)
  kChannelFailed,       // a completion error or malformed bytes from the peer
  kStepAborted,         // abort_step failed pending work
  kErrorSent,           // a transfer failed here: ERROR (the harness's extension) tells the peer
  kBufferRefused,       // the receiver could not make a tensor buffer: ERROR back to the sender
  kCount,
};
inline constexpr size_t kLegacyPaths = static_cast<size_t>(LegacyPath::kCount);

struct LegacyStats {
  LegacyStats();
  void path(LegacyPath p, uint64_t times = 1) { paths[static_cast<size_t>(p)] += times; }
  void item_moved(ItemState from, ItemState to);
  void recv_moved(RecvState from, RecvState to);

  std::array<uint64_t, kLegacyPaths> paths{};
  std::array<uint64_t, kMessageTypes> sent{};
  std::array<uint64_t, kMessageTypes> received{};
  TransitionTable item_machine;
  TransitionTable recv_machine;
  uint64_t tensor_writes = 0;
  uint64_t cpu_copies = 0;
  uint64_t engine_copies = 0;
  uint64_t registrations = 0;
  uint64_t reallocations = 0;
  uint64_t deferrals = 0;
  uint64_t malformed = 0;
  uint64_t unexpected = 0;
};

const char* legacy_path_name(LegacyPath path);
Coverage legacy_declared_coverage();
// Counts one rank's messages and paths into its declaration.
void add_legacy_coverage(Coverage& into, const LegacyStats& stats);

}  // namespace tensorwire::tf_legacy
