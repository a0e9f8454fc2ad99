#include "core/protocols/tf_verbs_legacy/legacy_rendezvous.h"

#include <cctype>
#include <utility>

#include "core/assert.h"
#include "core/state_digest.h"

namespace tensorwire::tf_legacy {

LegacyRendezvous::LegacyRendezvous(RankEnv env, const LegacyOptions& options)
    : env_(env), options_(options) {}

LegacyRendezvous::~LegacyRendezvous() = default;

Status LegacyRendezvous::start() {
  TW_ASSERT_MSG(!started_, "start() is called once");
  started_ = true;
  const uint32_t world = env_.nic.world_size();
  channels_.resize(world);
  peer_failed_.assign(world, false);
  env_.nic.set_completion_handler([this](const Completion& c) { on_completion(c); });
  // A start() that fails half-way leaves only the channels it made open.
  for (RankId peer : channel_peers(options_.channels, env_)) {
    channels_[peer] = std::make_unique<RdmaChannel>(env_, peer, options_, stats_,
                                                    [this](AuditEvent e) { audit(std::move(e)); });
    open_peers_.push_back(peer);
    if (Status s = channels_[peer]->start(); !s.is_ok()) return s;
  }
  return {};
}

void LegacyRendezvous::set_audit_sink(AuditSink* sink) const {
  audit_sink_ = sink;
  for (const auto& ch : channels_) {
    if (ch != nullptr) ch->report_rx_buffers([this](AuditEvent e) { audit(std::move(e)); });
  }
}

RdmaChannel& LegacyRendezvous::channel(RankId peer) {
  TW_ASSERT_MSG(peer < channels_.size() && channels_[peer] != nullptr, "a peer, not this rank");
  return *channels_[peer];
}

// The seed's Send: the tensor goes in the local table; a tensor id already
// popped from a tensor buffer's queue (TENSOR_REQUEST came first) takes it.
Status LegacyRendezvous::send(std::string_view name, uint64_t step_id, Tensor tensor,
                              SendDone done) {
  if (auto it = aborted_steps_.find(step_id); it != aborted_steps_.end()) return it->second;
  if (!is_dma_able(tensor.dtype)) {
    return Status(StatusCode::kInvalidArgument,
                  "tf_verbs_legacy: " + std::string(name) + ": string tensors are not carried");
  }
  Key key{std::string(name), step_id};
  if (sends_.count(key) != 0 || failed_sends_.count(key) != 0) {
    return Status(StatusCode::kInvalidArgument, "tf_verbs_legacy: " + key.first +
                                                    " sent twice in step " + std::to_string(step_id));
  }
  auto w = waiting_.find(key);
  if (w == waiting_.end()) {
    sends_.emplace(std::move(key), PendingSend{std::move(tensor), std::move(done)});
    return {};
  }
  RdmaChannel& ch = channel(w->second);
  waiting_.erase(w);
  RdmaTensorBuffer* tb = ch.find_tx(key.first);
  TW_ASSERT_MSG(tb != nullptr && tb->current && tb->current->step_id == step_id,
                "a waiting tensor id is its buffer's current item");
  tb->current->has_tensor = true;
  tb->current->tensor = std::move(tensor);
  tb->current->done = std::move(done);
  stats_.path(LegacyPath::kRecvBeforeSend);
  post_copy(ch, *tb);
  settle(ch.peer());
  return {};
}

// The seed's Recv: a callback in the channel's table, then TENSOR_REQUEST.
void LegacyRendezvous::recv(RankId src, std::string_view name, uint64_t step_id, RecvArgs args,
                            RecvDone done) {
  PendingRecv pending{args, std::move(done), next_recv_serial_++};
  if (auto it = aborted_steps_.find(step_id); it != aborted_steps_.end()) {
    return deliver(src, std::move(pending), it->second, {}, RecvState::kRequested);
  }
  if (src >= channels_.size() || channels_[src] == nullptr) {
    return deliver(src, std::move(pending),
                   Status(StatusCode::kInvalidArgument,
                          "tf_verbs_legacy: Recv from rank " + std::to_string(src) +
                              ": this rank has no channel to it (itself, outside the "
                              "cluster, or not a peer of the workload)"),
                   {}, RecvState::kRequested);
  }
  if (channel(src).failed()) {
    return deliver(src, std::move(pending), channel(src).failure(), {}, RecvState::kRequested);
  }
  RdmaMessage m;
  m.type = RdmaMessageType::kTensorRequest;
  m.name = std::string(name);
  m.step_id = step_id;
  callbacks_.emplace(RecvKey{src, m.name, step_id}, std::move(pending));
  channel(src).send_message(std::move(m));
  settle(src);
}

// Runs a Recv's callback, exactly once: every path that ends a Recv comes here.
void LegacyRendezvous::deliver(RankId /*src*/, PendingRecv recv, Status status, Tensor tensor,
                               RecvState from) {
  const bool delivered = status.is_ok() || from == RecvState::kCopyingOut;
  stats_.recv_moved(from, delivered ? RecvState::kDelivered : RecvState::kFailed);
  AuditEvent e;
  e.kind = AuditKind::kRecvCallback;
  e.serial = recv.serial;
  audit(std::move(e));
  if (recv.done) recv.done(std::move(status), std::move(tensor));
}

void LegacyRendezvous::settle(RankId peer) {
  if (peer < channels_.size() && channels_[peer] != nullptr && !peer_failed_[peer] &&
      channels_[peer]->failed()) {
    fail_channel(peer, channels_[peer]->failure());
  }
}

void LegacyRendezvous::settle_all() {
  for (RankId peer : open_peers_) settle(peer);
}

// Everything waiting on the channel fails: the peer is gone or its bytes
// made no sense, so no message can tell it (it learns from its own
// completions, as a broken queue pair flushes both ends).
void LegacyRendezvous::fail_channel(RankId peer, const Status& why_now) {
  RdmaChannel& ch = channel(peer);
  if (peer_failed_[peer]) return;
  peer_failed_[peer] = true;
  stats_.path(LegacyPath::kChannelFailed);
  ch.fail(why_now);  // nothing when it failed itself first: its first cause stays
  const Status why = ch.failure();
  std::vector<PendingRecv> failed;
  for (auto it = callbacks_.begin(); it != callbacks_.end();) {
    if (std::get<0>(it->first) != peer) {
      ++it;
      continue;
    }
    failed.push_back(std::move(it->second));
    it = callbacks_.erase(it);
  }
  for (auto& [name, tb] : ch.tx_buffers()) {
    if (tb.current && tb.current->state != ItemState::kCopying) {
      waiting_.erase({tb.current->name, tb.current->step_id});
      fail_item(*tb.current, why);
      tb.current.reset();
    }
    if (tb.in_write) fail_item(*tb.in_write, why);
    tb.in_write.reset();
    for (TensorItem& item : tb.queue) fail_item(item, why);
    tb.queue.clear();
  }
  for (PendingRecv& r : failed) deliver(peer, std::move(r), why, {}, RecvState::kRequested);
}

void LegacyRendezvous::fail_item(TensorItem& item, const Status& why) {
  stats_.item_moved(item.state, ItemState::kFailed);
  item.state = ItemState::kFailed;
  if (item.done) std::exchange(item.done, {})(why);
}

void LegacyRendezvous::abandon_current(RdmaChannel& ch, RdmaTensorBuffer& tb, const Status& why) {
  TW_ASSERT(tb.current.has_value());
  TensorItem item = std::move(*tb.current);
  tb.current.reset();
  fail_item(item, why);
  send_error(ch, item.name, item.step_id, why);
}

void LegacyRendezvous::send_error(RdmaChannel& ch, const std::string& name, uint64_t step_id,
                                  const Status& why) {
  TW_ASSERT(!why.is_ok());
  stats_.path(LegacyPath::kErrorSent);
  RdmaMessage m;
  m.type = RdmaMessageType::kError;
  m.name = name;
  m.step_id = step_id;
  m.error_code = why.code();
  m.error_text = why.message().substr(0, kMaxErrorTextBytes);
  ch.send_message(std::move(m));
}

void LegacyRendezvous::abort_step(uint64_t step_id, Status why) {
  TW_ASSERT(!why.is_ok());
  aborted_steps_.emplace(step_id, why);
  std::vector<std::pair<RankId, PendingRecv>> recvs;
  for (auto it = callbacks_.begin(); it != callbacks_.end();) {
    if (std::get<2>(it->first) != step_id) {
      ++it;
      continue;
    }
    recvs.emplace_back(std::get<0>(it->first), std::move(it->second));
    it = callbacks_.erase(it);
  }
  std::vector<PendingSend> sends;
  for (auto it = sends_.begin(); it != sends_.end();) {
    if (it->first.second != step_id) {
      ++it;
      continue;
    }
    sends.push_back(std::move(it->second));
    it = sends_.erase(it);
  }
  // A tensor id waiting for a Send that will not come frees its buffer.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->first.second != step_id) {
      ++it;
      continue;
    }
    RdmaChannel& ch = channel(it->second);
    RdmaTensorBuffer* tb = ch.find_tx(it->first.first);
    it = waiting_.erase(it);
    TW_ASSERT(tb != nullptr && tb->current);
    abandon_current(ch, *tb, why);
    send_next_item(ch, *tb);
  }
  if (!recvs.empty() || !sends.empty()) stats_.path(LegacyPath::kStepAborted);
  for (auto& [src, r] : recvs) deliver(src, std::move(r), why, {}, RecvState::kRequested);
  for (PendingSend& s : sends) {
    if (s.done) s.done(why);
  }
  settle_all();
}

// The seed's wire has no error message (its peer's Recv waited forever);
// here ERROR tells the peer, now if its TENSOR_REQUEST came, else when it
// comes. The tensor id, if it waits, lets its buffer go.
Status LegacyRendezvous::fail_send(std::string_view name, uint64_t step_id, Status why) {
  TW_ASSERT(!why.is_ok());
  Key key{std::string(name), step_id};
  if (sends_.count(key) != 0) {
    return Status(StatusCode::kInvalidArgument,
                  "tf_verbs_legacy: fail_send of " + key.first + ", which was sent");
  }
  if (auto w = waiting_.find(key); w != waiting_.end()) {
    RdmaChannel& ch = channel(w->second);
    RdmaTensorBuffer* tb = ch.find_tx(key.first);
    waiting_.erase(w);
    TW_ASSERT(tb != nullptr && tb->current);
    abandon_current(ch, *tb, why);
    send_next_item(ch, *tb);
    settle(ch.peer());
  }
  failed_sends_.emplace(std::move(key), std::move(why));
  return {};
}

void LegacyRendezvous::release(const Tensor& tensor) { env_.memory.free(tensor.buffer); }

// A Send nobody asked for, and a tensor id waiting for its Send, are not work
// in flight (TensorFlow's table holds them for a request or a Send that may
// never come). Everything else the protocol has going is.
size_t LegacyRendezvous::outstanding_work() const {
  size_t n = callbacks_.size() + copies_in_flight_;
  for (const auto& ch : channels_) {
    if (ch == nullptr || ch->failed()) continue;
    n += ch->messages_outstanding() + ch->writes_in_flight;
    for (const auto& [name, tb] : ch->tx_buffers()) {
      for (const TensorItem& item : tb.queue) n += item.has_tensor ? 1 : 0;
      n += tb.current && tb.current->has_tensor ? 1 : 0;
    }
  }
  return n;
}

uint64_t LegacyRendezvous::state_digest() const {
  StateDigest d;
  d.add(started_ ? 1 : 0).add(copies_in_flight_);
  for (const auto& ch : channels_) {
    if (ch != nullptr) ch->digest(d);
  }
  d.add(sends_.size());
  for (const auto& [key, s] : sends_) d.add(key.first).add(key.second).add(s.tensor.buffer.addr);
  d.add(waiting_.size());
  for (const auto& [key, peer] : waiting_) d.add(key.first).add(key.second).add(peer);
  d.add(failed_sends_.size());
  for (const auto& [key, why] : failed_sends_) d.add(key.first).add(key.second);
  d.add(aborted_steps_.size());
  for (const auto& [step, why] : aborted_steps_) d.add(step);
  d.add(callbacks_.size());
  for (const auto& [key, r] : callbacks_) {
    d.add(std::get<0>(key)).add(std::get<1>(key)).add(std::get<2>(key));
  }
  return d.value();
}

ProtocolCounters LegacyRendezvous::counters() const {
  ProtocolCounters c;
  for (size_t i = 0; i < kMessageTypes; ++i) {
    const auto type = static_cast<RdmaMessageType>(i + 1);
    if (type == RdmaMessageType::kTensorWrite) continue;  // content, counted below
    std::string name = std::string(message_type_name(type) + 13) + "_sent";  // past "RDMA_MESSAGE_"
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    c.push_back({name, CounterRole::kControlMessage, stats_.sent[i]});
  }
  c.push_back({"tensor_writes", CounterRole::kContentTransfer, stats_.tensor_writes});
  c.push_back({"cpu_copies", CounterRole::kCopy, stats_.cpu_copies});
  c.push_back({"copy_engine_copies", CounterRole::kCopy, stats_.engine_copies});
  c.push_back({"registrations", CounterRole::kRegistration, stats_.registrations});
  c.push_back({"buffer_reallocations", CounterRole::kOther, stats_.reallocations});
  c.push_back({"deferrals", CounterRole::kOther, stats_.deferrals});
  c.push_back({"malformed_messages", CounterRole::kProblem, stats_.malformed});
  c.push_back({"unexpected_messages", CounterRole::kProblem, stats_.unexpected});
  return c;
}

std::vector<TransitionTable> LegacyRendezvous::transition_tables() const {
  return {stats_.item_machine, stats_.recv_machine};
}

void LegacyRendezvous::add_coverage(Coverage& into) const { add_legacy_coverage(into, stats_); }

}  // namespace tensorwire::tf_legacy
