// RdmaChannel: this rank's end of the connection to one peer, as seed 004
// draws it: two message buffers (tx and rx), two ACK buffers and the tensor
// buffers, each with a local and a remote idle/busy status and a queue of
// pending items.
//
// - Every message is an RDMA write with immediate into the peer's rx message
//   buffer (immediate RDMA_IMM_DATA_MESSAGE). The tx message buffer takes the
//   next queued message only when it is idle locally (its write completed) and
//   remotely (the peer's ACK came back): one message in flight per direction.
// - An ACK is a write into the peer's rx ACK buffer (RDMA_IMM_DATA_ACK),
//   one at a time.
// - A tensor buffer's write is its header into the peer's header slot (plain
//   write) and its content into the peer's content block, with the buffer's
//   index as the immediate (README.md says why the header has a block of its
//   own).
// - Receives are posted with no buffer (a write-with-immediate only consumes
//   one), except the first, where the peer's setup send lands.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/protocols/tf_verbs_legacy/channel_setup.h"
#include "core/protocols/tf_verbs_legacy/legacy_audit.h"
#include "core/protocols/tf_verbs_legacy/legacy_message.h"
#include "core/protocols/tf_verbs_legacy/legacy_options.h"
#include "core/protocols/tf_verbs_legacy/legacy_stats.h"
#include "core/rank_env.h"
#include "core/rendezvous.h"
#include "core/state_digest.h"

namespace tensorwire::tf_legacy {

enum class BufferStatus : uint8_t { kNone, kIdle, kBusy };

// A tensor id in a tensor buffer's queue, with the tensor once the
// application has sent it.
struct TensorItem {
  std::string name;
  uint64_t step_id = 0;
  bool has_tensor = false;
  Tensor tensor;
  SendDone done;
  ItemState state = ItemState::kQueued;
};

// The sender's tensor buffer for one tensor name to the peer.
struct RdmaTensorBuffer {
  std::string name;
  std::optional<uint32_t> index;  // header slot and immediate, from its first BUFFER_REQUEST
  BufferStatus local = BufferStatus::kNone;
  BufferStatus remote = BufferStatus::kNone;
  Buffer content;  // header excluded; length 0: none yet
  MemoryRegion region;
  RemoteRegion remote_content;
  uint64_t remote_size = 0;
  std::deque<TensorItem> queue;
  std::optional<TensorItem> current;   // popped: waiting for its Send, or copying in
  std::optional<TensorItem> in_write;  // its write posted, not yet completed
};

// The receiver's tensor buffer for one tensor name from the peer.
struct RxTensorBuffer {
  std::string name;
  uint32_t index = 0;
  Buffer content;
  MemoryRegion region;
};

using AuditFn = std::function<void(AuditEvent)>;

class RdmaChannel {
 public:
  RdmaChannel(RankEnv env, RankId peer, const LegacyOptions& options, LegacyStats& stats,
              AuditFn audit);
  ~RdmaChannel();
  RdmaChannel(const RdmaChannel&) = delete;
  RdmaChannel& operator=(const RdmaChannel&) = delete;

  // Allocates and registers the six fixed buffers, posts every receive and
  // sends the setup record.
  Status start();
  RankId peer() const { return peer_; }
  bool failed() const { return !failure_.is_ok(); }
  const Status& failure() const { return failure_; }
  void fail(Status why);
  bool ready() const { return remote_.has_value(); }
  Status on_setup(uint32_t byte_len);

  // The message buffer and the ACK buffer.
  void send_message(RdmaMessage m);
  void send_ack();
  void message_written();  // its write completed
  void ack_written();
  void ack_arrived();      // the peer's ACK for our last message

  // The bytes a write-with-immediate left in a receive buffer; empty when
  // `byte_len` does not fit or the memory holds no bytes.
  std::span<const std::byte> rx_message(uint32_t byte_len);
  std::span<const std::byte> rx_ack(uint32_t byte_len);
  std::span<const std::byte> rx_header(uint32_t index);
  Status repost_receive();

  // Tensor buffers.
  RdmaTensorBuffer& tx_buffer(const std::string& name);  // find or create
  RdmaTensorBuffer* find_tx(const std::string& name);
  Result<RxTensorBuffer*> rx_buffer_for_request(const std::string& name);  // find or create
  RxTensorBuffer* rx_by_index(uint32_t index);
  Status grow_rx(RxTensorBuffer& rx, uint64_t bytes);
  Status grow_tx(RdmaTensorBuffer& tb, uint64_t bytes);
  void release_rx(const RxTensorBuffer& rx);  // copied out: the peer may write it again
  // Posts the header (and the content, with the immediate) of a write.
  Status post_tensor_write(RdmaTensorBuffer& tb, const RdmaMessage& header);
  Status post(const SendWorkRequest& wr);
  void drain_pending();

  std::map<std::string, RdmaTensorBuffer>& tx_buffers() { return tx_; }
  const std::map<std::string, RdmaTensorBuffer>& tx_buffers() const { return tx_; }
  size_t messages_outstanding() const;
  // Every buffer the peer may write now, as kRxBufferCreated events: for a
  // sink attached after start().
  void report_rx_buffers(const AuditFn& to) const;
  uint64_t writes_in_flight = 0;  // tensor content writes posted, not completed
  void digest(StateDigest& d) const;

 private:
  Result<Buffer> allocate_registered(uint64_t bytes, Access access, MemoryRegion& region);
  void free_registered(Buffer& b, MemoryRegion& region);
  void pump_messages();
  void pump_ack();
  Status post_receive(bool with_buffer);
  Buffer slot(const Buffer& table, uint32_t index) const;
  void audit_rx(AuditKind kind, RxBufferKind buffer, const Buffer& b, const std::string& name = {});

  RankEnv env_;
  RankId peer_;
  LegacyOptions options_;
  LegacyStats& stats_;
  AuditFn audit_;
  QpHandle qp_;
  Status failure_;
  std::optional<ChannelSetup> remote_;
  // tx/rx message, ACK and header-table buffers and their registrations.
  Buffer tx_message_, rx_message_, tx_ack_, rx_ack_, tx_headers_, rx_headers_, setup_landing_;
  MemoryRegion tx_message_mr_, rx_message_mr_, tx_ack_mr_, rx_ack_mr_, tx_headers_mr_,
      rx_headers_mr_, setup_landing_mr_;
  BufferStatus message_local_ = BufferStatus::kBusy;  // the setup send uses it first
  BufferStatus message_remote_ = BufferStatus::kIdle;
  std::deque<RdmaMessage> message_queue_;
  BufferStatus ack_local_ = BufferStatus::kIdle;
  uint32_t acks_pending_ = 0;
  std::map<std::string, RdmaTensorBuffer> tx_;
  std::map<std::string, RxTensorBuffer> rx_;
  std::vector<std::string> rx_names_;  // by index
  uint32_t next_tx_index_ = 0;
  std::deque<SendWorkRequest> pending_;  // posts the send queue refused
};

}  // namespace tensorwire::tf_legacy
