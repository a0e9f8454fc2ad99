#include "core/protocols/mvapich2_gpu/eager_channel.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/assert.h"
#include "core/protocols/mvapich2_gpu/work_request_id.h"

namespace tensorwire::mvapich2 {

EagerChannel::EagerChannel(RankEnv env, RankId peer, const Mv2Options& options)
    : env_(env), peer_(peer), options_(options), qp_(env.nic.queue_pair_to(peer)) {
  TW_ASSERT(options.receive_pool_size >= kMinReceivePoolSize);
}

EagerChannel::~EagerChannel() {
  // Registered last to first; a region that never registered has length 0.
  for (MemoryRegion* r : {&send_region_, &receive_region_}) {
    if (r->length > 0) (void)env_.nic.deregister_memory(*r);
  }
  for (Buffer* b : {&send_pool_, &receive_pool_}) {
    if (b->length > 0) env_.memory.free(*b);
  }
}

size_t EagerChannel::slot_bytes() const {
  // Rounded to 64 bytes: slots never share a cache line.
  return (max_header_size() + options_.eager_max_bytes + 63) / 64 * 64;
}

Buffer EagerChannel::receive_slot(uint32_t slot) const {
  return Buffer{receive_pool_.addr + slot * slot_bytes(), slot_bytes(), receive_pool_.kind, 0};
}

Buffer EagerChannel::send_slot(uint32_t slot) const {
  return Buffer{send_pool_.addr + slot * slot_bytes(), slot_bytes(), send_pool_.kind, 0};
}

Status EagerChannel::start() {
  const uint64_t bytes = uint64_t{options_.receive_pool_size} * slot_bytes();
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
  for (uint32_t s = options_.receive_pool_size; s > 0; --s) free_send_slots_.push_back(s - 1);
  credits_ = data_credits(options_.receive_pool_size);
  for (uint32_t s = 0; s < options_.receive_pool_size; ++s) {
    if (Status st = post_receive(s); !st.is_ok()) return st;
  }
  return {};
}

void EagerChannel::on_handler(MessageType type, MessageHandler handler) {
  handlers_[message_type_index(type)] = std::move(handler);
}

Status EagerChannel::post_receive(uint32_t slot) {
  const Buffer b = receive_slot(slot);
  RecvWorkRequest wr;
  wr.wr_id = WorkRequestId{WorkKind::kReceive, peer_, slot}.pack();
  wr.local = Sge{b.addr, static_cast<uint32_t>(b.length), receive_region_.lkey};
  Status s = env_.nic.post_recv(qp_, wr);
  if (s.is_ok()) ++receives_posted_;
  return s;
}

void EagerChannel::send(Message m, InlineContent content) {
  if (failed()) {
    if (content.source.length > 0) env_.memory.free(content.source);
    return;
  }
  TW_ASSERT_MSG(m.type != MessageType::kCredit, "credit messages are the channel's own");
  data_queue_.push_back(Queued{std::move(m), content});
  pump();
}

bool EagerChannel::post(Queued& q) {
  TW_ASSERT(!free_send_slots_.empty());
  const uint32_t slot = free_send_slots_.back();
  const Buffer b = send_slot(slot);
  q.message.credits = static_cast<uint16_t>(std::min<uint32_t>(unreturned_, UINT16_MAX));
  Result<std::vector<std::byte>> header = encode_header(q.message);
  TW_ASSERT_MSG(header.is_ok(), "the protocol encodes only valid messages");
  const uint64_t content = q.message.type == MessageType::kEager ? q.message.tensor_bytes : 0;
  TW_ASSERT(header->size() + content <= b.length);
  std::span<std::byte> view = env_.memory.host_view(b);
  TW_ASSERT_MSG(view.size() >= header->size(), "message slots hold bytes in every mode");
  std::copy(header->begin(), header->end(), view.begin());
  if (content > 0) {
    Status copied = env_.memory.cpu_copy(b, header->size(), q.content.source, 0, content);
    TW_ASSERT_MSG(copied.is_ok(), "inline content fits the slot it was sized for");
  }
  SendWorkRequest wr;
  wr.wr_id = WorkRequestId{WorkKind::kSend, peer_, slot}.pack();
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
  if (q.message.credits > 0 && q.message.type != MessageType::kCredit) ++credits_piggybacked;
  ++sent[message_type_index(q.message.type)];
  return true;
}

void EagerChannel::pump() {
  while (!failed() && !free_send_slots_.empty()) {
    if (credit_queued_) {
      // Data messages may have carried the credits meanwhile.
      credit_queued_ = false;
      if (unreturned_ < credit_threshold()) continue;
      Queued q{Message{}, {}};
      q.message.type = MessageType::kCredit;
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
// back: on the next data message, or on a CREDIT message once half the
// window waits and no data message can carry it (none queued, or none may
// go for want of credits). A CREDIT message carries at least half the
// window, so at most two are ever in flight: their two receives are kept out
// of the window.
void EagerChannel::return_credit() {
  ++unreturned_;
  if (unreturned_ >= credit_threshold() && (data_queue_.empty() || credits_ == 0)) {
    credit_queued_ = true;
  }
}

uint32_t EagerChannel::credit_threshold() const {
  return (data_credits(options_.receive_pool_size) + 1) / 2;
}

void EagerChannel::on_receive(const Completion& c, uint32_t slot) {
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
  Result<Decoded> d = decode(view.first(c.byte_len));
  if (!d) {
    ++malformed;
    fail(d.status());
    return;
  }
  const Message& m = d->message;
  ++received[message_type_index(m.type)];
  credits_ += m.credits;
  const MessageHandler& handler = handlers_[message_type_index(m.type)];
  if (handler) handler(Arrival{peer_, m, b, d->payload_offset});
  if (failed()) return;
  const bool data = m.type != MessageType::kCredit;
  if (Status s = post_receive(slot); !s.is_ok()) return fail(s);
  if (data) return_credit();
  pump();
}

void EagerChannel::on_send(const Completion& c, uint32_t slot) {
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

void EagerChannel::fail(Status why) {
  if (failed()) return;
  failure_ = std::move(why);
  for (Queued& q : data_queue_) {
    if (q.content.source.length > 0) env_.memory.free(q.content.source);
  }
  data_queue_.clear();
  credit_queued_ = false;
}

}  // namespace tensorwire::mvapich2
