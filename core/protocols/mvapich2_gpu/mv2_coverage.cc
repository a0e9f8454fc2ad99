#include <iterator>
#include <utility>

#include "core/protocols/mvapich2_gpu/mv2_stats.h"

namespace tensorwire::mvapich2 {
namespace {

constexpr const char* kPathNames[] = {
    "content in the EAGER message",
    "dead or empty tensor",
    "eager content copied out of a GPU",
    "eager content copied into a GPU",
    "rendezvous: RTS, CTS, writes, FINs",
    "blocks written from the user's buffer",
    "blocks staged device-to-host in vbufs",
    "blocks written into the user's buffer",
    "blocks land in vbufs, then copied to the GPU",
    "naive staging: the whole buffer as one block",
    "rendezvous of several blocks",
    "a returned vbuf offered again",
    "block waits for a sender vbuf",
    "write waits for the send queue",
    "Recv before Send",
    "Send before Recv",
    "message waits for a credit",
    "credits returned on a data message",
    "channel failed",
    "step aborted",
    "Send failed: the Recv is told",
    "RTS for a Recv no longer waiting",
};
static_assert(std::size(kPathNames) == kMv2Paths);

template <typename State>
void allow(TransitionTable& t, std::initializer_list<std::pair<State, State>> edges) {
  for (auto [from, to] : edges) t.allow(static_cast<size_t>(from), static_cast<size_t>(to));
}

Coverage declaration(const Mv2Options& options) {
  Coverage c;
  const Mv2Stats empty;
  add_transition_coverage(c, {empty.send_machine, empty.recv_machine, empty.send_block_machine,
                              empty.recv_block_machine});
  for (const std::string_view group : {kCoverageMessagesSent, kCoverageMessagesReceived}) {
    for (size_t t = 1; t <= kMessageTypes; ++t) {
      c.declare(group, message_type_name(static_cast<MessageType>(t)));
    }
  }
  for (const char* name : kPathNames) c.declare(kCoveragePaths, name);
  // Staging changes which paths a GPU transfer takes: a run says which it ran.
  for (Staging s : {Staging::kNaive, Staging::kPipelined}) {
    c.declare(kCoverageOptions, std::string("staging = ") + staging_name(s));
  }
  c.count(kCoverageOptions, std::string("staging = ") + staging_name(options.staging));
  return c;
}

}  // namespace

Mv2Stats::Mv2Stats()
    : send_machine("Mv2Send", {"Waiting", "RtsSent", "Streaming", "Released", "Failed"}),
      recv_machine("Mv2Recv", {"Requested", "Copying", "Rendezvous", "Delivered", "Failed"}),
      send_block_machine("Mv2SendBlock",
                         {"Waiting", "CopyingToHost", "Ready", "Writing", "Finished"}),
      recv_block_machine("Mv2RecvBlock", {"Offered", "Landed", "CopyingToDevice", "Done"}) {
  using S = SendState;
  allow<S>(send_machine, {{S::kWaiting, S::kRtsSent}, {S::kWaiting, S::kReleased},
                          {S::kWaiting, S::kFailed}, {S::kRtsSent, S::kStreaming},
                          {S::kRtsSent, S::kFailed}, {S::kStreaming, S::kReleased},
                          {S::kStreaming, S::kFailed}});
  using R = RecvState;
  allow<R>(recv_machine, {{R::kRequested, R::kCopying}, {R::kRequested, R::kRendezvous},
                          {R::kRequested, R::kDelivered}, {R::kRequested, R::kFailed},
                          {R::kCopying, R::kDelivered}, {R::kRendezvous, R::kDelivered},
                          {R::kRendezvous, R::kFailed}});
  using B = SendBlockState;
  allow<B>(send_block_machine, {{B::kWaiting, B::kCopyingToHost}, {B::kWaiting, B::kReady},
                                {B::kCopyingToHost, B::kReady}, {B::kReady, B::kWriting},
                                {B::kWriting, B::kFinished}});
  using D = RecvBlockState;
  allow<D>(recv_block_machine, {{D::kOffered, D::kLanded}, {D::kLanded, D::kCopyingToDevice},
                                {D::kLanded, D::kDone}, {D::kCopyingToDevice, D::kDone}});
}

void Mv2Stats::send_moved(SendState from, SendState to) {
  send_machine.count(static_cast<size_t>(from), static_cast<size_t>(to));
}
void Mv2Stats::recv_moved(RecvState from, RecvState to) {
  recv_machine.count(static_cast<size_t>(from), static_cast<size_t>(to));
}
void Mv2Stats::send_block_moved(SendBlockState from, SendBlockState to) {
  send_block_machine.count(static_cast<size_t>(from), static_cast<size_t>(to));
}
void Mv2Stats::recv_block_moved(RecvBlockState from, RecvBlockState to) {
  recv_block_machine.count(static_cast<size_t>(from), static_cast<size_t>(to));
}

const char* mv2_path_name(Mv2Path path) {
  const auto i = static_cast<size_t>(path);
  return i < kMv2Paths ? kPathNames[i] : "?";
}

Coverage mv2_declared_coverage(const Mv2Options& options) { return declaration(options); }

void add_mv2_coverage(Coverage& into, const Mv2Stats& stats,
                      const std::array<uint64_t, kMessageTypes>& sent,
                      const std::array<uint64_t, kMessageTypes>& received) {
  for (size_t i = 0; i < kMessageTypes; ++i) {
    const char* name = message_type_name(static_cast<MessageType>(i + 1));
    into.count(kCoverageMessagesSent, name, sent[i]);
    into.count(kCoverageMessagesReceived, name, received[i]);
  }
  for (size_t i = 0; i < kMv2Paths; ++i) into.count(kCoveragePaths, kPathNames[i], stats.paths[i]);
}

}  // namespace tensorwire::mvapich2
