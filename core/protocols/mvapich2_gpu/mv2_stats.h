// What an MVAPICH2-GPU instance counts: its state machines' transitions (a
// Send, a Recv, and a block on each side), the paths through the design
// (core/coverage.h names them), writes, copies and registrations. Messages
// are counted by the channels.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/coverage.h"
#include "core/protocols/mvapich2_gpu/mv2_message.h"
#include "core/protocols/mvapich2_gpu/mv2_options.h"
#include "core/state_transitions.h"

namespace tensorwire::mvapich2 {

// A Send: waits for the peer's REQUEST; eager content leaves at once
// (Released), a rendezvous sends RTS and streams its blocks once CTS came.
enum class SendState : uint8_t { kWaiting, kRtsSent, kStreaming, kReleased, kFailed };
// A Recv: REQUEST sent; an eager tensor copied into a GPU; a rendezvous
// (CTS sent, blocks arriving); delivered (the callback ran) or failed before
// any content arrived.
enum class RecvState : uint8_t { kRequested, kCopying, kRendezvous, kDelivered, kFailed };
// A block on the sender: waits for its CTS, is copied to a host vbuf (a
// staged source), is ready, is being written, is finished (FIN sent).
enum class SendBlockState : uint8_t { kWaiting, kCopyingToHost, kReady, kWriting, kFinished };
// A block on the receiver: offered in a CTS, landed (its FIN came), being
// copied to the GPU out of its vbuf, done.
enum class RecvBlockState : uint8_t { kOffered, kLanded, kCopyingToDevice, kDone };

enum class Mv2Path : uint8_t {
  kEagerInline,         // content in the EAGER message
  kDeadOrEmpty,         // a dead or empty tensor: EAGER without content
  kEagerFromDevice,     // eager content copied out of a GPU first
  kEagerToDevice,       // eager content copied into a GPU
  kRendezvous,          // RTS, CTS, RDMA writes, FINs
  kDirectSource,        // blocks written straight from the user's buffer
  kStagedSource,        // blocks copied device-to-host into vbufs, then written
  kDirectDestination,   // blocks written straight into the user's buffer
  kStagedDestination,   // blocks land in host vbufs, then copied to the GPU
  kNaiveStaging,        // the whole buffer staged as one block
  kSeveralBlocks,       // a rendezvous of more than one block
  kVbufReoffered,       // a vbuf came back and a later CTS offered it again
  kBlockWaitsForVbuf,   // a sender block with a destination waited for a free vbuf
  kWriteWaitsForQueue,  // a write found the send queue full
  kRecvBeforeSend,      // the REQUEST waited for the application's Send
  kSendBeforeRecv,      // the Send waited for the peer's REQUEST
  kCreditWait,          // a message waited for a credit
  kCreditPiggybacked,   // credits went back on a data message
  kChannelFailed,       // a peer's channel failed (completion error, bad message)
  kStepAborted,         // abort_step failed pending work
  kSendFailed,          // fail_send: the Recv is told with ERROR
  kRtsRefused,          // an RTS for a Recv no longer waiting: ERROR back
  kCount,
};
inline constexpr size_t kMv2Paths = static_cast<size_t>(Mv2Path::kCount);

struct Mv2Stats {
  Mv2Stats();
  void path(Mv2Path p, uint64_t times = 1) { paths[static_cast<size_t>(p)] += times; }
  void send_moved(SendState from, SendState to);
  void recv_moved(RecvState from, RecvState to);
  void send_block_moved(SendBlockState from, SendBlockState to);
  void recv_block_moved(RecvBlockState from, RecvBlockState to);

  std::array<uint64_t, kMv2Paths> paths{};
  TransitionTable send_machine;
  TransitionTable recv_machine;
  TransitionTable send_block_machine;
  TransitionTable recv_block_machine;
  uint64_t rdma_writes = 0;
  uint64_t bytes_written = 0;
  uint64_t inline_bytes = 0;
  uint64_t copies = 0;
  uint64_t registrations = 0;
  uint64_t unexpected_messages = 0;  // an answer for a Recv or transfer no longer waiting
  uint64_t protocol_errors = 0;      // a peer's CTS or FIN that breaks the protocol
};

const char* mv2_path_name(Mv2Path path);
// Every item at 0, but the options items `options` selects.
Coverage mv2_declared_coverage(const Mv2Options& options);
// Counts one rank's messages and paths into its declaration.
void add_mv2_coverage(Coverage& into, const Mv2Stats& stats,
                      const std::array<uint64_t, kMessageTypes>& sent,
                      const std::array<uint64_t, kMessageTypes>& received);

}  // namespace tensorwire::mvapich2
