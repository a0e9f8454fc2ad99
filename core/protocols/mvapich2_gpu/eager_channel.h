// One peer's control channel (MVAPICH2's eager vbufs): a pool of receives
// posted in advance and re-posted as each message is handled, send slots,
// credits that keep the peer's pool from running out, and a FIFO that keeps
// the messages to the peer in order. Arrivals go to the handler of their
// type. Every message of the protocol (REQUEST, EAGER, RTS, CTS, FIN, ERROR,
// CREDIT) travels here; the rendezvous' content goes by RDMA write.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "core/nic.h"
#include "core/protocols/mvapich2_gpu/mv2_message.h"
#include "core/protocols/mvapich2_gpu/mv2_options.h"
#include "core/rank_env.h"

namespace tensorwire::mvapich2 {

// An arrived message; an eager tensor's content lies in `slot` from
// `payload_offset` until the handler returns (the receive is re-posted then).
struct Arrival {
  RankId peer = 0;
  const Message& message;
  const Buffer& slot;
  uint64_t payload_offset = 0;
};
using MessageHandler = std::function<void(const Arrival&)>;

// An eager tensor's content in host memory the protocol allocated: the channel
// copies it into the send slot when the message goes, then frees it.
struct InlineContent {
  Buffer source;  // tensor_bytes long; length 0: none
};

class EagerChannel {
 public:
  EagerChannel(RankEnv env, RankId peer, const Mv2Options& options);
  ~EagerChannel();
  EagerChannel(const EagerChannel&) = delete;
  EagerChannel& operator=(const EagerChannel&) = delete;

  // Allocates and registers the receive pool and the send slots and posts
  // every receive.
  Status start();
  void on_handler(MessageType type, MessageHandler handler);

  // Queues `m` (and an eager tensor's content, copied into the slot when it
  // goes): every message but CREDIT waits for a credit, all for a free slot.
  void send(Message m, InlineContent content = {});
  // Completions of this channel's receives and sends. False: the channel
  // failed (a completion error, or a message that does not decode).
  void on_receive(const Completion& c, uint32_t slot);
  void on_send(const Completion& c, uint32_t slot);
  // Posts what waits, while credits and slots allow.
  void pump();
  void fail(Status why);

  bool failed() const { return !failure_.is_ok(); }
  const Status& failure() const { return failure_; }
  RankId peer() const { return peer_; }
  uint32_t receives_posted() const { return receives_posted_; }
  uint32_t credits() const { return credits_; }
  size_t queued() const { return data_queue_.size(); }
  std::array<uint64_t, kMessageTypes> sent{};
  std::array<uint64_t, kMessageTypes> received{};
  uint64_t credit_waits = 0;       // a data message found no credit
  uint64_t credits_piggybacked = 0;  // credits returned on a data message
  uint64_t malformed = 0;

  // The data credits of a pool: two receives are kept for credit messages.
  static uint32_t data_credits(uint32_t pool) { return pool - 2; }

 private:
  struct Queued {
    Message message;
    InlineContent content;
  };
  size_t slot_bytes() const;
  Buffer receive_slot(uint32_t slot) const;
  Buffer send_slot(uint32_t slot) const;
  Status post_receive(uint32_t slot);
  // Takes a slot and posts `q`; false when the send queue is full.
  bool post(Queued& q);
  void return_credit();
  uint32_t credit_threshold() const;

  RankEnv env_;
  RankId peer_;
  Mv2Options options_;
  QpHandle qp_;
  Buffer receive_pool_;
  Buffer send_pool_;
  MemoryRegion receive_region_;
  MemoryRegion send_region_;
  std::vector<uint32_t> free_send_slots_;
  uint32_t receives_posted_ = 0;
  uint32_t credits_ = 0;     // messages the peer's pool takes before it returns some
  uint32_t unreturned_ = 0;  // receives re-posted whose credits the peer has not been told
  bool credit_queued_ = false;
  std::deque<Queued> data_queue_;
  std::array<MessageHandler, kMessageTypes> handlers_;
  Status failure_;
};

}  // namespace tensorwire::mvapich2
