// One peer's channel of eager messages, for a protocol whose control messages
// (and small tensors, inline) travel by two-sided send/receive: OneFlow
// CommNet's "Eager Message" and MVAPICH2's eager vbufs are the same mechanism.
// A pool of receives posted in advance and re-posted as each message is
// handled, send slots, credits that keep the peer's pool from running out,
// and a FIFO that keeps the messages to the peer in order. Arrivals go to the
// handler of their type.
//
// The protocol supplies its wire format as `Wire`, a struct of types and
// static functions (no state):
//   Message, MessageType, Decoded (with .message and .payload_offset);
//     a Message has .type, .credits (u16) and .tensor_bytes;
//   kMessageTypes; index(MessageType) -> 0 .. kMessageTypes - 1;
//   kCredit (the channel's own credit message), kInlineContent (the type whose
//     tensor_bytes of content follow the header);
//   max_header_size(), encode_header(Message), decode(bytes);
//   receive_wr_id(peer, slot), send_wr_id(peer, slot): the protocol's packing.
// Header-only because it is a template; it names no protocol.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/assert.h"
#include "core/nic.h"
#include "core/rank_env.h"

namespace tensorwire::protocols {

// An arrived message; an inline tensor's content lies in `slot` from
// `payload_offset` until the handler returns (the receive is re-posted then).
template <typename Message>
struct EagerArrival {
  RankId peer = 0;
  const Message& message;
  const Buffer& slot;
  uint64_t payload_offset = 0;
};

// An inline tensor's content in host memory the protocol allocated: the
// channel copies it into the send slot when the message goes, then frees it.
struct InlineContent {
  Buffer source;  // tensor_bytes long; length 0: none
};

struct EagerChannelConfig {
  uint32_t receive_pool_size = 64;  // at least 4: two data credits, two for credit messages
  uint64_t eager_max_bytes = 4096;  // inline content a slot holds beside the largest header
};

template <typename Wire>
class EagerChannel {
 public:
  using Message = typename Wire::Message;
  using MessageType = typename Wire::MessageType;
  using Arrival = EagerArrival<Message>;
  using MessageHandler = std::function<void(const Arrival&)>;
  // A planted bug's hook: a receive whose message this accepts is not
  // re-posted. Null: every receive is.
  using SkipRepost = bool (*)(const Message&);

  EagerChannel(RankEnv env, RankId peer, EagerChannelConfig config, SkipRepost skip_repost = nullptr)
      : env_(env), peer_(peer), config_(config), skip_repost_(skip_repost),
        qp_(env.nic.queue_pair_to(peer)) {
    TW_ASSERT(config.receive_pool_size >= 4);
  }
  ~EagerChannel() {
    // Registered last to first; a region that never registered has length 0.
    for (MemoryRegion* r : {&send_region_, &receive_region_}) {
      if (r->length > 0) (void)env_.nic.deregister_memory(*r);
    }
    for (Buffer* b : {&send_pool_, &receive_pool_}) {
      if (b->length > 0) env_.memory.free(*b);
    }
  }
  EagerChannel(const EagerChannel&) = delete;
  EagerChannel& operator=(const EagerChannel&) = delete;

  // Allocates and registers the receive pool and the send slots and posts
  // every receive.
  Status start();
  void on_handler(MessageType type, MessageHandler handler) {
    handlers_[Wire::index(type)] = std::move(handler);
  }

  // Queues `m` (and an inline tensor's content, copied into the slot when it
  // goes): every message but the credit message waits for a credit, all for
  // a free slot.
  void send(Message m, InlineContent content = {});
  // Completions of this channel's receives and sends. A completion error or
  // a message that does not decode fails the channel.
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
  std::array<uint64_t, Wire::kMessageTypes> sent{};
  std::array<uint64_t, Wire::kMessageTypes> received{};
  uint64_t credit_waits = 0;         // a data message found no credit
  uint64_t credits_piggybacked = 0;  // credits returned on a data message
  uint64_t malformed = 0;

  // The data credits of a pool: two receives are kept for credit messages.
  static uint32_t data_credits(uint32_t pool) { return pool - 2; }

 private:
  struct Queued {
    Message message;
    InlineContent content;
  };
  size_t slot_bytes() const {
    // Rounded to 64 bytes: slots never share a cache line.
    return (Wire::max_header_size() + config_.eager_max_bytes + 63) / 64 * 64;
  }
  Buffer receive_slot(uint32_t slot) const {
    return Buffer{receive_pool_.addr + slot * slot_bytes(), slot_bytes(), receive_pool_.kind, 0};
  }
  Buffer send_slot(uint32_t slot) const {
    return Buffer{send_pool_.addr + slot * slot_bytes(), slot_bytes(), send_pool_.kind, 0};
  }
  Status post_receive(uint32_t slot);
  // Takes a slot and posts `q`; false when the send queue is full.
  bool post(Queued& q);
  void write_slot(const Queued& q, const Buffer& slot, const std::vector<std::byte>& header);
  void return_credit();
  uint32_t credit_threshold() const { return (data_credits(config_.receive_pool_size) + 1) / 2; }

  RankEnv env_;
  RankId peer_;
  EagerChannelConfig config_;
  SkipRepost skip_repost_;
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
  std::array<MessageHandler, Wire::kMessageTypes> handlers_;
  Status failure_;
};

template <typename Wire>
Status EagerChannel<Wire>::start() {
  const uint64_t bytes = uint64_t{config_.receive_pool_size} * slot_bytes();
  for (Buffer* b : {&receive_pool_, &send_pool_}) {
    Result<Buffer> r = env_.memory.allocate(MemoryKind::kHostPinned, 0, bytes);
    if (!r) return r.status();
    *b = *r;
  }
  Result<MemoryRegion> rr = env_.nic.register_memory(receive_pool_, Access::kLocalWrite);
  if (!rr) return rr.status();
  receive_region_ = *rr;
  Result<MemoryRegion> sr = env_.nic.register_memory(send_pool_, Access::kNone);
  if (!sr) return sr.status();
  send_region_ = *sr;
  for (uint32_t s = config_.receive_pool_size; s > 0; --s) free_send_slots_.push_back(s - 1);
  credits_ = data_credits(config_.receive_pool_size);
  for (uint32_t s = 0; s < config_.receive_pool_size; ++s) {
    if (Status st = post_receive(s); !st.is_ok()) return st;
  }
  return {};
}

template <typename Wire>
Status EagerChannel<Wire>::post_receive(uint32_t slot) {
  const Buffer b = receive_slot(slot);
  RecvWorkRequest wr;
  wr.wr_id = Wire::receive_wr_id(peer_, slot);
  wr.local = Sge{b.addr, static_cast<uint32_t>(b.length), receive_region_.lkey};
  Status s = env_.nic.post_recv(qp_, wr);
  if (s.is_ok()) ++receives_posted_;
  return s;
}

template <typename Wire>
void EagerChannel<Wire>::send(Message m, InlineContent content) {
  if (failed()) {
    if (content.source.length > 0) env_.memory.free(content.source);
    return;
  }
  TW_ASSERT_MSG(m.type != Wire::kCredit, "credit messages are the channel's own");
  data_queue_.push_back(Queued{std::move(m), content});
  pump();
}

// The header, then an inline tensor's content, into the send slot.
template <typename Wire>
void EagerChannel<Wire>::write_slot(const Queued& q, const Buffer& slot,
                                    const std::vector<std::byte>& header) {
  const uint64_t content = q.message.type == Wire::kInlineContent ? q.message.tensor_bytes : 0;
  TW_ASSERT(header.size() + content <= slot.length);
  std::span<std::byte> view = env_.memory.host_view(slot);
  TW_ASSERT_MSG(view.size() >= header.size(), "message slots hold bytes in every mode");
  std::copy(header.begin(), header.end(), view.begin());
  if (content > 0) {
    Status copied = env_.memory.cpu_copy(slot, header.size(), q.content.source, 0, content);
    TW_ASSERT_MSG(copied.is_ok(), "inline content fits the slot it was sized for");
  }
}

template <typename Wire>
bool EagerChannel<Wire>::post(Queued& q) {
  TW_ASSERT(!free_send_slots_.empty());
  const uint32_t slot = free_send_slots_.back();
  const Buffer b = send_slot(slot);
  q.message.credits = static_cast<uint16_t>(std::min<uint32_t>(unreturned_, UINT16_MAX));
  Result<std::vector<std::byte>> header = Wire::encode_header(q.message);
  TW_ASSERT_MSG(header.is_ok(), "the protocol encodes only valid messages");
  write_slot(q, b, *header);
  const uint64_t content = q.message.type == Wire::kInlineContent ? q.message.tensor_bytes : 0;
  SendWorkRequest wr;
  wr.wr_id = Wire::send_wr_id(peer_, slot);
  wr.opcode = WorkOpcode::kSend;
  wr.local = Sge{b.addr, static_cast<uint32_t>(header->size() + content), send_region_.lkey};
  Status s = env_.nic.post_send(qp_, wr);
  if (s.code() == StatusCode::kNoResource) return false;
  if (!s.is_ok()) {
    fail(s);
    return true;
  }
  free_send_slots_.pop_back();
  if (q.content.source.length > 0) env_.memory.free(q.content.source);  // copied into the slot
  q.content.source = Buffer{};
  unreturned_ -= q.message.credits;
  if (q.message.credits > 0 && q.message.type != Wire::kCredit) ++credits_piggybacked;
  ++sent[Wire::index(q.message.type)];
  return true;
}

template <typename Wire>
void EagerChannel<Wire>::pump() {
  while (!failed() && !free_send_slots_.empty()) {
    if (credit_queued_) {
      // Data messages may have carried the credits meanwhile.
      credit_queued_ = false;
      if (unreturned_ < credit_threshold()) continue;
      Queued q{Message{}, {}};
      q.message.type = Wire::kCredit;
      if (!post(q)) {
        credit_queued_ = true;
        return;
      }
      continue;
    }
    if (data_queue_.empty()) return;
    if (credits_ == 0) {
      // Blocked: the credits this side owes cannot ride on its data.
      if (unreturned_ >= credit_threshold()) {
        credit_queued_ = true;
        continue;
      }
      ++credit_waits;
      return;
    }
    if (!post(data_queue_.front())) return;
    if (failed()) return;  // post failed the channel, which emptied the queue
    --credits_;
    data_queue_.pop_front();
  }
}

// A re-posted receive that held a data message is a credit the peer gets
// back: on the next data message, or on a credit message once half the
// window waits and no data message can carry it (none queued, or none may
// go for want of credits). A credit message carries at least half the
// window, so at most two are ever in flight: their two receives are kept out
// of the window.
template <typename Wire>
void EagerChannel<Wire>::return_credit() {
  ++unreturned_;
  if (unreturned_ >= credit_threshold() && (data_queue_.empty() || credits_ == 0)) {
    credit_queued_ = true;
  }
}

template <typename Wire>
void EagerChannel<Wire>::on_receive(const Completion& c, uint32_t slot) {
  TW_ASSERT(receives_posted_ > 0);
  --receives_posted_;
  if (failed()) return;
  if (c.status != CompletionStatus::kSuccess) {
    fail(Status(StatusCode::kQpError, std::string("receive from rank ") + std::to_string(peer_) +
                                          ": " + completion_status_name(c.status)));
    return;
  }
  const Buffer b = receive_slot(slot);
  std::span<std::byte> view = env_.memory.host_view(b);
  TW_ASSERT(c.byte_len <= view.size());
  Result<typename Wire::Decoded> d = Wire::decode(view.first(c.byte_len));
  if (!d) {
    ++malformed;
    fail(d.status());
    return;
  }
  const Message& m = d->message;
  ++received[Wire::index(m.type)];
  credits_ += m.credits;
  const MessageHandler& handler = handlers_[Wire::index(m.type)];
  if (handler) handler(Arrival{peer_, m, b, d->payload_offset});
  if (failed()) return;
  if (skip_repost_ == nullptr || !skip_repost_(m)) {
    if (Status s = post_receive(slot); !s.is_ok()) return fail(s);
  }
  if (m.type != Wire::kCredit) return_credit();
  pump();
}

template <typename Wire>
void EagerChannel<Wire>::on_send(const Completion& c, uint32_t slot) {
  free_send_slots_.push_back(slot);
  if (c.status != CompletionStatus::kSuccess && !failed()) {
    fail(Status(c.status == CompletionStatus::kRnrRetryExceeded ? StatusCode::kNoResource
                                                                 : StatusCode::kQpError,
                std::string("send to rank ") + std::to_string(peer_) + ": " +
                    completion_status_name(c.status)));
    return;
  }
  pump();
}

template <typename Wire>
void EagerChannel<Wire>::fail(Status why) {
  if (failed()) return;
  failure_ = std::move(why);
  for (Queued& q : data_queue_) {
    if (q.content.source.length > 0) env_.memory.free(q.content.source);
  }
  data_queue_.clear();
  credit_queued_ = false;
}

}  // namespace tensorwire::protocols
