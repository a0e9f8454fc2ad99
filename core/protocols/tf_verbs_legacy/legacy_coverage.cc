#include "core/protocols/tf_verbs_legacy/legacy_stats.h"

#include <iterator>
#include <utility>

namespace tensorwire::tf_legacy {
namespace {

constexpr const char* kPathNames[] = {
    "tensor buffer allocated: BUFFER_REQUEST",
    "tensor buffer grows: reallocated",
    "tensor buffer busy: tensor id deferred",
    "message waits for the message buffer",
    "ACK waits for the ACK buffer",
    "Recv before Send",
    "Send before Recv",
    "GPU source staged through host",
    "GPU destination staged through host",
    "dead or empty tensor: header only",
    "post waits for the send queue",
    "tensor for a Recv no longer waiting",
    "channel failed",
    "step aborted",
    "transfer failed: ERROR sent",
    "tensor buffer refused: ERROR to the sender",
};
static_assert(std::size(kPathNames) == kLegacyPaths);

Coverage declaration() {
  Coverage c;
  const LegacyStats empty;
  add_transition_coverage(c, {empty.item_machine, empty.recv_machine});
  for (const std::string_view group : {kCoverageMessagesSent, kCoverageMessagesReceived}) {
    for (size_t t = 1; t <= kMessageTypes; ++t) {
      c.declare(group, message_type_name(static_cast<RdmaMessageType>(t)));
    }
  }
  for (const char* name : kPathNames) c.declare(kCoveragePaths, name);
  return c;
}

}  // namespace

LegacyStats::LegacyStats()
    : item_machine("RdmaTensorBuffer", {"Queued", "Deferred", "BufferRequested", "Copying",
                                        "Writing", "Done", "Failed"}),
      recv_machine("LegacyRecv", {"Requested", "CopyingOut", "Delivered", "Failed"}) {
  using I = ItemState;
  // A deferred tensor id is popped again when its buffer's write completes or
  // its BUFFER_IDLE arrives, the later of the two: it finds the buffer idle.
  // One that waited for its BUFFER_RESPONSE finds both sides idle too.
  for (auto [from, to] : {std::pair{I::kQueued, I::kDeferred}, {I::kQueued, I::kBufferRequested},
                          {I::kQueued, I::kCopying}, {I::kQueued, I::kFailed},
                          {I::kDeferred, I::kBufferRequested}, {I::kDeferred, I::kCopying},
                          {I::kDeferred, I::kFailed}, {I::kBufferRequested, I::kCopying},
                          {I::kBufferRequested, I::kFailed}, {I::kCopying, I::kWriting},
                          {I::kCopying, I::kFailed}, {I::kWriting, I::kDone},
                          {I::kWriting, I::kFailed}}) {
    item_machine.allow(static_cast<size_t>(from), static_cast<size_t>(to));
  }
  using R = RecvState;
  for (auto [from, to] : {std::pair{R::kRequested, R::kCopyingOut}, {R::kRequested, R::kDelivered},
                          {R::kRequested, R::kFailed}, {R::kCopyingOut, R::kDelivered}}) {
    recv_machine.allow(static_cast<size_t>(from), static_cast<size_t>(to));
  }
}

void LegacyStats::item_moved(ItemState from, ItemState to) {
  item_machine.count(static_cast<size_t>(from), static_cast<size_t>(to));
}
void LegacyStats::recv_moved(RecvState from, RecvState to) {
  recv_machine.count(static_cast<size_t>(from), static_cast<size_t>(to));
}

const char* legacy_path_name(LegacyPath path) {
  const auto i = static_cast<size_t>(path);
  return i < kLegacyPaths ? kPathNames[i] : "?";
}

Coverage legacy_declared_coverage() {
  static const Coverage kDeclared = declaration();
  return kDeclared;
}

void add_legacy_coverage(Coverage& into, const LegacyStats& stats) {
  for (size_t i = 0; i < kMessageTypes; ++i) {
    const char* name = message_type_name(static_cast<RdmaMessageType>(i + 1));
    into.count(kCoverageMessagesSent, name, stats.sent[i]);
    into.count(kCoverageMessagesReceived, name, stats.received[i]);
  }
  for (size_t i = 0; i < kLegacyPaths; ++i) into.count(kCoveragePaths, kPathNames[i], stats.paths[i]);
}

}  // namespace tensorwire::tf_legacy
