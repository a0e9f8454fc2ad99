#include "core/protocols/oneflow_commnet/commnet_stats.h"

#include <iterator>

namespace tensorwire::oneflow {
namespace {

constexpr const char* kPathNames[] = {
    "content inline",
    "dead or empty tensor",
    "content by RDMA read",
    "read in several chunks",
    "chunk waits for a read slot",
    "staging copy of a GPU source",
    "host proxy, then a copy to the GPU",
    "inline content copied to a GPU",
    "Recv before Send",
    "Send before Recv",
    "message waits for a credit",
    "credits returned on a data message",
    "channel failed",
    "step aborted",
    "Send failed: the Recv is told",
};
static_assert(std::size(kPathNames) == kCommNetPaths);

Coverage declaration() {
  Coverage c;
  const CommNetStats empty;
  add_transition_coverage(c, {empty.send_machine, empty.recv_machine});
  for (const std::string_view group : {kCoverageMessagesSent, kCoverageMessagesReceived}) {
    for (size_t t = 1; t <= kMessageTypes; ++t) {
      c.declare(group, message_type_name(static_cast<MessageType>(t)));
    }
  }
  for (const char* name : kPathNames) c.declare(kCoveragePaths, name);
  return c;
}

}  // namespace

CommNetStats::CommNetStats()
    : send_machine("CommNetSend", {"Waiting", "TokenLive", "Released", "Failed"}),
      recv_machine("CommNetRecv", {"Requested", "Reading", "Copying", "Delivered", "Failed"}) {
  using S = SendState;
  for (auto [from, to] : {std::pair{S::kWaiting, S::kTokenLive}, {S::kWaiting, S::kReleased},
                          {S::kWaiting, S::kFailed}, {S::kTokenLive, S::kReleased},
                          {S::kTokenLive, S::kFailed}}) {
    send_machine.allow(static_cast<size_t>(from), static_cast<size_t>(to));
  }
  using R = RecvState;
  for (auto [from, to] : {std::pair{R::kRequested, R::kReading}, {R::kRequested, R::kCopying},
                          {R::kRequested, R::kDelivered}, {R::kRequested, R::kFailed},
                          {R::kReading, R::kCopying}, {R::kReading, R::kDelivered},
                          {R::kReading, R::kFailed}, {R::kCopying, R::kDelivered}}) {
    recv_machine.allow(static_cast<size_t>(from), static_cast<size_t>(to));
  }
}

void CommNetStats::send_moved(SendState from, SendState to) {
  send_machine.count(static_cast<size_t>(from), static_cast<size_t>(to));
}
void CommNetStats::recv_moved(RecvState from, RecvState to) {
  recv_machine.count(static_cast<size_t>(from), static_cast<size_t>(to));
}

const char* commnet_path_name(CommNetPath path) {
  const auto i = static_cast<size_t>(path);
  return i < kCommNetPaths ? kPathNames[i] : "?";
}

// No options group: each option changes how much, not which paths (the
// paths say which the run took).
Coverage commnet_declared_coverage(const CommNetOptions& /*options*/) {
  static const Coverage kDeclared = declaration();
  return kDeclared;
}

void add_commnet_coverage(Coverage& into, const CommNetStats& stats,
                          const std::array<uint64_t, kMessageTypes>& sent,
                          const std::array<uint64_t, kMessageTypes>& received) {
  for (size_t i = 0; i < kMessageTypes; ++i) {
    const char* name = message_type_name(static_cast<MessageType>(i + 1));
    into.count(kCoverageMessagesSent, name, sent[i]);
    into.count(kCoverageMessagesReceived, name, received[i]);
  }
  for (size_t i = 0; i < kCommNetPaths; ++i) into.count(kCoveragePaths, kPathNames[i], stats.paths[i]);
}

}  // namespace tensorwire::oneflow
