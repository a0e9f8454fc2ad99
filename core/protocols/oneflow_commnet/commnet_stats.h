// What a CommNet instance counts: its two state machines' transitions, the
// paths through the design (core/coverage.h names them), reads, copies and
// registrations. Messages are counted by the channels.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/coverage.h"
#include "core/protocols/oneflow_commnet/commnet_message.h"
#include "core/protocols/oneflow_commnet/commnet_options.h"
#include "core/state_transitions.h"

namespace tensorwire::oneflow {

// A Send: waits for the peer's REQUEST, then its content leaves inline
// (Released at once) or its token lives until READ_DONE.
enum class SendState : uint8_t { kWaiting, kTokenLive, kReleased, kFailed };
// A Recv: REQUEST sent; reading a descriptor's chunks; copying into a GPU the
// NIC cannot reach; delivered (the callback ran, ok or not) or failed before
// any content arrived.
enum class RecvState : uint8_t { kRequested, kReading, kCopying, kDelivered, kFailed };

enum class CommNetPath : uint8_t {
  kEagerInline,         // content inline in EAGER_TENSOR
  kDeadOrEmpty,         // a dead or empty tensor: EAGER_TENSOR without content
  kRmaRead,             // content by RDMA read of a descriptor
  kSeveralChunks,       // a read of more than one chunk
  kReadWaitsForSlot,    // a chunk waited for a read in flight to finish
  kStagingCopy,         // a GPU source the NIC cannot reach, copied to host first
  kHostProxy,           // a GPU destination the NIC cannot reach: host proxy, then a copy
  kEagerToDevice,       // inline content copied into GPU memory by the copy engine
  kRecvBeforeSend,      // the REQUEST waited for the application's Send
  kSendBeforeRecv,      // the Send waited for the peer's REQUEST
  kCreditWait,          // a message waited for a credit
  kCreditPiggybacked,   // credits went back on a data message
  kChannelFailed,       // a peer's channel failed (completion error, malformed message)
  kStepAborted,         // abort_step failed pending work
  kSendFailed,          // fail_send: the Recv is told with ERROR
  kCount,
};
inline constexpr size_t kCommNetPaths = static_cast<size_t>(CommNetPath::kCount);

struct CommNetStats {
  CommNetStats();
  void path(CommNetPath p, uint64_t times = 1) { paths[static_cast<size_t>(p)] += times; }
  void send_moved(SendState from, SendState to);
  void recv_moved(RecvState from, RecvState to);

  std::array<uint64_t, kCommNetPaths> paths{};
  TransitionTable send_machine;
  TransitionTable recv_machine;
  uint64_t rdma_reads = 0;
  uint64_t bytes_read = 0;
  uint64_t inline_bytes = 0;
  uint64_t copies = 0;
  uint64_t registrations = 0;
  uint64_t unexpected_messages = 0;  // an answer for a Recv no longer waiting
};

const char* commnet_path_name(CommNetPath path);
// Every item at 0, but the options items `options` selects.
Coverage commnet_declared_coverage(const CommNetOptions& options);
// Counts one rank's messages and paths into its declaration.
void add_commnet_coverage(Coverage& into, const CommNetStats& stats,
                          const std::array<uint64_t, kMessageTypes>& sent,
                          const std::array<uint64_t, kMessageTypes>& received);

}  // namespace tensorwire::oneflow
