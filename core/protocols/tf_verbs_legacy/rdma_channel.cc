#include "core/protocols/tf_verbs_legacy/rdma_channel.h"

#include <algorithm>
#include <utility>

#include "core/assert.h"
#include "core/protocols/tf_verbs_legacy/work_request_id.h"

namespace tensorwire::tf_legacy {

RdmaChannel::RdmaChannel(RankEnv env, RankId peer, const LegacyOptions& options,
                         LegacyStats& stats, AuditFn audit)
    : env_(env), peer_(peer), options_(options), stats_(stats), audit_(std::move(audit)),
      qp_(env.nic.queue_pair_to(peer)) {}

RdmaChannel::~RdmaChannel() {
  for (auto& [name, tb] : tx_) free_registered(tb.content, tb.region);
  for (auto& [name, rx] : rx_) free_registered(rx.content, rx.region);
  free_registered(setup_landing_, setup_landing_mr_);
  free_registered(rx_headers_, rx_headers_mr_);
  free_registered(tx_headers_, tx_headers_mr_);
  free_registered(rx_ack_, rx_ack_mr_);
  free_registered(tx_ack_, tx_ack_mr_);
  free_registered(rx_message_, rx_message_mr_);
  free_registered(tx_message_, tx_message_mr_);
}

Result<Buffer> RdmaChannel::allocate_registered(uint64_t bytes, Access access,
                                                MemoryRegion& region) {
  Result<Buffer> b = env_.memory.allocate(MemoryKind::kHostPinned, 0, bytes);
  if (!b) return b.status();
  Result<MemoryRegion> r = env_.nic.register_memory(*b, access);
  if (!r) {
    env_.memory.free(*b);
    return r.status();
  }
  ++stats_.registrations;
  region = *r;
  return *b;
}

void RdmaChannel::free_registered(Buffer& b, MemoryRegion& region) {
  if (region.length > 0 || region.rkey != 0 || region.lkey != 0) {
    (void)env_.nic.deregister_memory(region);
  }
  if (b.length > 0) env_.memory.free(b);
  b = Buffer{};
  region = MemoryRegion{};
}

void RdmaChannel::audit_rx(AuditKind kind, RxBufferKind buffer, const Buffer& b,
                           const std::string& name) {
  AuditEvent e;
  e.kind = kind;
  e.peer = peer_;
  e.buffer = buffer;
  e.addr = b.addr;
  e.length = b.length;
  e.name = name;
  audit_(std::move(e));
}

Status RdmaChannel::start() {
  const uint64_t table = uint64_t{options_.tensor_buffers_per_peer} * kMessageBufferBytes;
  struct Plan {
    Buffer* buffer;
    MemoryRegion* region;
    uint64_t bytes;
    Access access;
  };
  const Access remote = Access::kLocalWrite | Access::kRemoteWrite;
  for (const Plan& p : {Plan{&tx_message_, &tx_message_mr_, kMessageBufferBytes, Access::kNone},
                        Plan{&rx_message_, &rx_message_mr_, kMessageBufferBytes, remote},
                        Plan{&tx_ack_, &tx_ack_mr_, kMessageBufferBytes, Access::kNone},
                        Plan{&rx_ack_, &rx_ack_mr_, kMessageBufferBytes, remote},
                        Plan{&tx_headers_, &tx_headers_mr_, table, Access::kNone},
                        Plan{&rx_headers_, &rx_headers_mr_, table, remote},
                        Plan{&setup_landing_, &setup_landing_mr_, kChannelSetupBytes,
                             Access::kLocalWrite}}) {
    Result<Buffer> b = allocate_registered(p.bytes, p.access, *p.region);
    if (!b) return b.status();
    *p.buffer = *b;
  }
  audit_rx(AuditKind::kRxBufferCreated, RxBufferKind::kMessage, rx_message_);
  audit_rx(AuditKind::kRxBufferCreated, RxBufferKind::kAck, rx_ack_);
  for (uint32_t i = 0; i < options_.receives_per_peer; ++i) {
    if (Status s = post_receive(i == 0); !s.is_ok()) return s;
  }
  ChannelSetup mine;
  mine.rx_message_buffer = {rx_message_.addr, rx_message_mr_.rkey};
  mine.rx_ack_buffer = {rx_ack_.addr, rx_ack_mr_.rkey};
  mine.rx_header_table = {rx_headers_.addr, rx_headers_mr_.rkey};
  mine.header_slots = options_.tensor_buffers_per_peer;
  const std::vector<std::byte> bytes = encode_setup(mine);
  std::span<std::byte> view = env_.memory.host_view(tx_message_);
  TW_ASSERT_MSG(view.size() >= bytes.size(), "message buffers hold bytes in every mode");
  std::copy(bytes.begin(), bytes.end(), view.begin());
  SendWorkRequest wr;
  wr.wr_id = WorkRequestId{WorkKind::kSetup, peer_, 0}.pack();
  wr.opcode = WorkOpcode::kSend;
  wr.local = Sge{tx_message_.addr, static_cast<uint32_t>(bytes.size()), tx_message_mr_.lkey};
  return post(wr);
}

Status RdmaChannel::post_receive(bool with_buffer) {
  RecvWorkRequest wr;
  wr.wr_id = WorkRequestId{WorkKind::kReceive, peer_, with_buffer ? 1u : 0u}.pack();
  if (with_buffer) {
    wr.local = Sge{setup_landing_.addr, static_cast<uint32_t>(setup_landing_.length),
                   setup_landing_mr_.lkey};
  }
  return env_.nic.post_recv(qp_, wr);
}

Status RdmaChannel::repost_receive() { return post_receive(false); }

Status RdmaChannel::on_setup(uint32_t byte_len) {
  if (remote_.has_value()) {
    return Status(StatusCode::kMalformedMessage, "legacy verbs: rank " + std::to_string(peer_) +
                                                     " sent its channel setup twice");
  }
  std::span<std::byte> view = env_.memory.host_view(setup_landing_);
  if (byte_len > view.size()) {
    return Status(StatusCode::kMalformedMessage, "legacy verbs channel setup: " +
                                                     std::to_string(byte_len) + " bytes");
  }
  Result<ChannelSetup> s = decode_setup(view.first(byte_len), kMaxTensorBuffersPerPeer);
  if (!s) return s.status();
  remote_ = *s;
  pump_messages();
  pump_ack();
  return {};
}

void RdmaChannel::fail(Status why) {
  TW_ASSERT(!why.is_ok());
  if (failed()) return;
  failure_ = std::move(why);
  pending_.clear();  // never reached the NIC: no completion will come
  message_queue_.clear();
  acks_pending_ = 0;
}

void RdmaChannel::send_message(RdmaMessage m) {
  if (failed()) return;
  TW_ASSERT_MSG(validate(m).is_ok(), "the protocol sends only valid messages");
  if (!message_queue_.empty() || message_local_ != BufferStatus::kIdle ||
      message_remote_ != BufferStatus::kIdle || !ready()) {
    stats_.path(LegacyPath::kMessageWaits);
  }
  message_queue_.push_back(std::move(m));
  pump_messages();
}

void RdmaChannel::pump_messages() {
  if (failed() || !ready() || message_queue_.empty()) return;
  if (message_local_ != BufferStatus::kIdle || message_remote_ != BufferStatus::kIdle) return;
  const RdmaMessage m = std::move(message_queue_.front());
  message_queue_.pop_front();
  Result<std::vector<std::byte>> bytes = encode(m);
  TW_ASSERT_MSG(bytes.is_ok() && bytes->size() <= kMessageBufferBytes, "a message fits its buffer");
  std::span<std::byte> view = env_.memory.host_view(tx_message_);
  std::copy(bytes->begin(), bytes->end(), view.begin());
  message_local_ = BufferStatus::kBusy;
  message_remote_ = BufferStatus::kBusy;
  ++stats_.sent[message_type_index(m.type)];
  SendWorkRequest wr;
  wr.wr_id = WorkRequestId{WorkKind::kMessage, peer_, 0}.pack();
  wr.opcode = WorkOpcode::kRdmaWriteWithImm;
  wr.local = Sge{tx_message_.addr, static_cast<uint32_t>(bytes->size()), tx_message_mr_.lkey};
  wr.remote_addr = remote_->rx_message_buffer.addr;
  wr.rkey = remote_->rx_message_buffer.rkey;
  wr.imm_data = kImmDataMessage;
  AuditEvent e;
  e.kind = AuditKind::kMessagePosted;
  e.peer = peer_;
  audit_(std::move(e));
  if (Status s = post(wr); !s.is_ok()) fail(s);
}

void RdmaChannel::message_written() {
  message_local_ = BufferStatus::kIdle;
  // The seed's rule: the remote side goes idle only on the peer's ACK.
  if (options_.planted_bug == PlantedBug::kIdleBeforeAck) message_remote_ = BufferStatus::kIdle;
  pump_messages();
}

void RdmaChannel::ack_arrived() {
  message_remote_ = BufferStatus::kIdle;
  pump_messages();
}

void RdmaChannel::send_ack() {
  if (failed()) return;
  if (ack_local_ != BufferStatus::kIdle || !ready()) stats_.path(LegacyPath::kAckWaits);
  ++acks_pending_;
  pump_ack();
}

void RdmaChannel::pump_ack() {
  if (failed() || !ready() || acks_pending_ == 0 || ack_local_ != BufferStatus::kIdle) return;
  --acks_pending_;
  RdmaMessage ack;
  ack.type = RdmaMessageType::kAck;
  Result<std::vector<std::byte>> bytes = encode(ack);
  TW_ASSERT(bytes.is_ok());
  std::span<std::byte> view = env_.memory.host_view(tx_ack_);
  std::copy(bytes->begin(), bytes->end(), view.begin());
  ack_local_ = BufferStatus::kBusy;
  ++stats_.sent[message_type_index(RdmaMessageType::kAck)];
  SendWorkRequest wr;
  wr.wr_id = WorkRequestId{WorkKind::kAck, peer_, 0}.pack();
  wr.opcode = WorkOpcode::kRdmaWriteWithImm;
  wr.local = Sge{tx_ack_.addr, static_cast<uint32_t>(bytes->size()), tx_ack_mr_.lkey};
  wr.remote_addr = remote_->rx_ack_buffer.addr;
  wr.rkey = remote_->rx_ack_buffer.rkey;
  wr.imm_data = kImmDataAck;
  if (Status s = post(wr); !s.is_ok()) fail(s);
}

void RdmaChannel::ack_written() {
  ack_local_ = BufferStatus::kIdle;
  pump_ack();
}

std::span<const std::byte> RdmaChannel::rx_message(uint32_t byte_len) {
  std::span<std::byte> view = env_.memory.host_view(rx_message_);
  if (byte_len > view.size()) return {};
  return view.first(byte_len);
}

std::span<const std::byte> RdmaChannel::rx_ack(uint32_t byte_len) {
  std::span<std::byte> view = env_.memory.host_view(rx_ack_);
  if (byte_len > view.size()) return {};
  return view.first(byte_len);
}

Buffer RdmaChannel::slot(const Buffer& table, uint32_t index) const {
  TW_ASSERT(index < options_.tensor_buffers_per_peer);
  return Buffer{table.addr + uint64_t{index} * kMessageBufferBytes, kMessageBufferBytes,
                table.kind, 0};
}

std::span<const std::byte> RdmaChannel::rx_header(uint32_t index) {
  if (index >= options_.tensor_buffers_per_peer) return {};
  return env_.memory.host_view(slot(rx_headers_, index));
}

RdmaTensorBuffer& RdmaChannel::tx_buffer(const std::string& name) {
  auto [it, created] = tx_.try_emplace(name);
  if (created) it->second.name = name;
  return it->second;
}

RdmaTensorBuffer* RdmaChannel::find_tx(const std::string& name) {
  auto it = tx_.find(name);
  return it == tx_.end() ? nullptr : &it->second;
}

Result<RxTensorBuffer*> RdmaChannel::rx_buffer_for_request(const std::string& name) {
  auto it = rx_.find(name);
  if (it != rx_.end()) return &it->second;
  if (rx_names_.size() >= options_.tensor_buffers_per_peer) {
    return Status(StatusCode::kResourceLimit,
                  "legacy verbs: more than " + std::to_string(options_.tensor_buffers_per_peer) +
                      " tensor buffers from rank " + std::to_string(peer_) +
                      " (raise [protocol.tf_verbs_legacy] tensor_buffers_per_peer)");
  }
  RxTensorBuffer rx;
  rx.name = name;
  rx.index = static_cast<uint32_t>(rx_names_.size());
  rx_names_.push_back(name);
  audit_rx(AuditKind::kRxBufferCreated, RxBufferKind::kTensorHeader, slot(rx_headers_, rx.index),
           name);
  return &rx_.emplace(name, std::move(rx)).first->second;
}

RxTensorBuffer* RdmaChannel::rx_by_index(uint32_t index) {
  if (index >= rx_names_.size()) return nullptr;
  return &rx_.at(rx_names_[index]);
}

Status RdmaChannel::grow_rx(RxTensorBuffer& rx, uint64_t bytes) {
  if (rx.content.length >= bytes) return {};
  if (rx.content.length > 0) {
    audit_rx(AuditKind::kRxBufferFreed, RxBufferKind::kTensorContent, rx.content, rx.name);
    free_registered(rx.content, rx.region);
  }
  Result<Buffer> b = allocate_registered(std::max(bytes, kMinContentBytes),
                                         Access::kLocalWrite | Access::kRemoteWrite, rx.region);
  if (!b) return b.status();
  rx.content = *b;
  audit_rx(AuditKind::kRxBufferCreated, RxBufferKind::kTensorContent, rx.content, rx.name);
  return {};
}

Status RdmaChannel::grow_tx(RdmaTensorBuffer& tb, uint64_t bytes) {
  const uint32_t slots = ready() ? remote_->header_slots : 0;
  if (!tb.index.has_value() && next_tx_index_ >= slots) {
    return Status(StatusCode::kResourceLimit,
                  "legacy verbs: rank " + std::to_string(peer_) + " holds " +
                      std::to_string(slots) + " tensor buffers per peer; " + tb.name +
                      " would be one more (raise tensor_buffers_per_peer)");
  }
  free_registered(tb.content, tb.region);
  Result<Buffer> b = allocate_registered(std::max(bytes, kMinContentBytes), Access::kNone, tb.region);
  if (!b) return b.status();
  tb.content = *b;
  // Only now: the peer numbers its buffers in the order BUFFER_REQUESTs
  // arrive, and one that failed here is never sent.
  if (!tb.index.has_value()) tb.index = next_tx_index_++;
  return {};
}

void RdmaChannel::release_rx(const RxTensorBuffer& rx) {
  audit_rx(AuditKind::kRxBufferReleased, RxBufferKind::kTensorHeader, slot(rx_headers_, rx.index),
           rx.name);
  audit_rx(AuditKind::kRxBufferReleased, RxBufferKind::kTensorContent, rx.content, rx.name);
}

Status RdmaChannel::post_tensor_write(RdmaTensorBuffer& tb, const RdmaMessage& header) {
  TW_ASSERT(tb.index.has_value() && ready());
  Result<std::vector<std::byte>> bytes = encode(header);
  TW_ASSERT_MSG(bytes.is_ok() && bytes->size() <= kMessageBufferBytes, "a header fits its slot");
  const Buffer mine = slot(tx_headers_, *tb.index);
  std::span<std::byte> view = env_.memory.host_view(mine);
  std::copy(bytes->begin(), bytes->end(), view.begin());
  const bool content = header.tensor_bytes > 0;
  SendWorkRequest h;
  h.wr_id = WorkRequestId{content ? WorkKind::kTensorHeader : WorkKind::kTensorContent, peer_,
                          *tb.index}.pack();
  h.opcode = content ? WorkOpcode::kRdmaWrite : WorkOpcode::kRdmaWriteWithImm;
  h.local = Sge{mine.addr, static_cast<uint32_t>(bytes->size()), tx_headers_mr_.lkey};
  h.remote_addr = remote_->rx_header_table.addr + uint64_t{*tb.index} * kMessageBufferBytes;
  h.rkey = remote_->rx_header_table.rkey;
  h.imm_data = *tb.index;
  ++stats_.sent[message_type_index(RdmaMessageType::kTensorWrite)];
  ++stats_.tensor_writes;
  ++writes_in_flight;
  if (Status s = post(h); !s.is_ok()) return s;
  if (!content) return {};
  SendWorkRequest c;
  c.wr_id = WorkRequestId{WorkKind::kTensorContent, peer_, *tb.index}.pack();
  c.opcode = WorkOpcode::kRdmaWriteWithImm;
  c.local = Sge{tb.content.addr, static_cast<uint32_t>(header.tensor_bytes), tb.region.lkey};
  c.remote_addr = tb.remote_content.addr;
  c.rkey = tb.remote_content.rkey;
  c.imm_data = *tb.index;
  return post(c);
}

Status RdmaChannel::post(const SendWorkRequest& wr) {
  if (failed()) return failure_;
  if (!pending_.empty()) {
    pending_.push_back(wr);
    return {};
  }
  Status s = env_.nic.post_send(qp_, wr);
  if (s.code() == StatusCode::kNoResource) {
    stats_.path(LegacyPath::kSendQueueFull);
    pending_.push_back(wr);
    return {};
  }
  return s;
}

void RdmaChannel::drain_pending() {
  while (!failed() && !pending_.empty()) {
    Status s = env_.nic.post_send(qp_, pending_.front());
    if (s.code() == StatusCode::kNoResource) return;
    pending_.pop_front();
    if (!s.is_ok()) return fail(s);
  }
}

size_t RdmaChannel::messages_outstanding() const {
  if (failed()) return 0;
  return message_queue_.size() + acks_pending_ + pending_.size() +
         (message_remote_ == BufferStatus::kBusy ? 1 : 0) +
         (message_local_ == BufferStatus::kBusy ? 1 : 0) + (ack_local_ == BufferStatus::kBusy ? 1 : 0);
}

void RdmaChannel::report_rx_buffers(const AuditFn& to) const {
  auto created = [&](RxBufferKind kind, const Buffer& b, const std::string& name) {
    if (b.length == 0) return;
    AuditEvent e;
    e.kind = AuditKind::kRxBufferCreated;
    e.peer = peer_;
    e.buffer = kind;
    e.addr = b.addr;
    e.length = b.length;
    e.name = name;
    to(std::move(e));
  };
  created(RxBufferKind::kMessage, rx_message_, {});
  created(RxBufferKind::kAck, rx_ack_, {});
  for (const auto& [name, rx] : rx_) {
    if (rx_headers_.length > 0) created(RxBufferKind::kTensorHeader, slot(rx_headers_, rx.index), name);
    created(RxBufferKind::kTensorContent, rx.content, name);
  }
}

void RdmaChannel::digest(StateDigest& d) const {
  d.add(failed() ? 1 : 0).add(ready() ? 1 : 0);
  d.add(static_cast<uint64_t>(message_local_)).add(static_cast<uint64_t>(message_remote_));
  d.add(static_cast<uint64_t>(ack_local_)).add(acks_pending_).add(pending_.size());
  d.add(message_queue_.size());
  for (const RdmaMessage& m : message_queue_) d.add(static_cast<uint64_t>(m.type)).add(m.name).add(m.step_id);
  d.add(writes_in_flight).add(next_tx_index_).add(rx_names_.size());
  for (const auto& [name, tb] : tx_) {
    d.add(name).add(static_cast<uint64_t>(tb.local)).add(static_cast<uint64_t>(tb.remote));
    d.add(tb.content.length).add(tb.remote_size).add(tb.queue.size()).add(tb.current ? 1 : 0);
    for (const TensorItem& i : tb.queue) d.add(i.step_id).add(i.has_tensor ? 1 : 0);
    if (tb.current) d.add(tb.current->step_id).add(static_cast<uint64_t>(tb.current->state));
    if (tb.in_write) d.add(tb.in_write->step_id);
  }
  for (const auto& [name, rx] : rx_) d.add(name).add(rx.index).add(rx.content.length);
}

}  // namespace tensorwire::tf_legacy
