#include "core/protocols/mvapich2_gpu/mv2_rendezvous.h"

#include <utility>

#include "core/assert.h"
#include "core/protocols/mvapich2_gpu/rndv_transfer.h"
#include "core/protocols/mvapich2_gpu/work_request_id.h"
#include "core/state_digest.h"

namespace tensorwire::mvapich2 {

Mv2Rendezvous::Mv2Rendezvous(RankEnv env, const Mv2Options& options)
    : env_(env), options_(options) {}

Mv2Rendezvous::~Mv2Rendezvous() {
  // What a broken run left behind; pools and caches free their own memory.
  for (auto& [id, t] : out_) {
    if (t->src_region.length > 0) (void)env_.nic.deregister_memory(t->src_region);
  }
  for (auto& [key, t] : in_) {
    if (t->dst_region.length > 0) (void)env_.nic.deregister_memory(t->dst_region);
  }
}

Status Mv2Rendezvous::start() {
  TW_ASSERT_MSG(!started_, "start() is called once");
  started_ = true;
  const uint32_t world = env_.nic.world_size();
  peers_.resize(world);
  peer_failed_.assign(world, false);
  // A start() that fails half-way leaves only the channels it made open.
  for (RankId p : channel_peers(options_.channels, env_)) {
    peers_[p] = std::make_unique<Peer>(env_, p, options_);
    open_peers_.push_back(p);
    install_handlers(peers_[p]->channel);
    if (Status s = peers_[p]->channel.start(); !s.is_ok()) return s;
  }
  env_.nic.set_completion_handler([this](const Completion& c) { on_completion(c); });
  return {};
}

void Mv2Rendezvous::install_handlers(EagerChannel& ch) {
  ch.on_handler(MessageType::kRequest, [this](const Arrival& a) { on_request(a); });
  ch.on_handler(MessageType::kEager, [this](const Arrival& a) { on_eager(a); });
  ch.on_handler(MessageType::kRts, [this](const Arrival& a) { on_rts(a); });
  ch.on_handler(MessageType::kCts, [this](const Arrival& a) { on_cts(a); });
  ch.on_handler(MessageType::kFin, [this](const Arrival& a) { on_fin(a); });
  ch.on_handler(MessageType::kError, [this](const Arrival& a) { on_error(a); });
}

Mv2Rendezvous::Peer& Mv2Rendezvous::peer(RankId p) {
  TW_ASSERT_MSG(p < peers_.size() && peers_[p] != nullptr, "a peer, not this rank");
  return *peers_[p];
}

EagerChannel& Mv2Rendezvous::channel(RankId p) { return peer(p).channel; }

void Mv2Rendezvous::on_completion(const Completion& c) {
  const WorkRequestId id = WorkRequestId::unpack(c.wr_id);
  TW_ASSERT_MSG(id.peer == c.peer, "a work request completes on its own peer's queue pair");
  switch (id.kind) {
    case WorkKind::kReceive: channel(id.peer).on_receive(c, id.index); break;
    case WorkKind::kSend: channel(id.peer).on_send(c, id.index); break;
    case WorkKind::kWrite: on_write_completion(c, id.index); break;
  }
  check_channel(id.peer);
  // A full send queue may have held back writes or messages to any peer.
  for (RankId p : open_peers_) {
    peers_[p]->channel.pump();
    if (!peers_[p]->channel.failed()) pump_writes(p);
  }
}

void Mv2Rendezvous::check_channel(RankId p) {
  if (peer_failed_[p] || !channel(p).failed()) return;
  peer_failed_[p] = true;
  fail_peer(p, channel(p).failure());
}

Status Mv2Rendezvous::send(std::string_view name, uint64_t step_id, Tensor tensor,
                               SendDone done) {
  if (auto it = aborted_steps_.find(step_id); it != aborted_steps_.end()) return it->second;
  if (!is_dma_able(tensor.dtype)) {
    return Status(StatusCode::kInvalidArgument,
                  "mvapich2_gpu: " + std::string(name) + ": string tensors are not carried");
  }
  if (started_ && live_peers() == 0) {
    return Status(StatusCode::kPeerGone, "mvapich2_gpu: " + std::string(name) +
                                             ": every peer's channel has failed");
  }
  Key key{std::string(name), step_id};
  if (sends_.count(key) != 0 || failed_sends_.count(key) != 0) {
    return Status(StatusCode::kInvalidArgument, "mvapich2_gpu: " + key.first +
                                                    " sent twice in step " + std::to_string(step_id));
  }
  PendingSend send{std::move(tensor), std::move(done)};
  auto req = requests_.find(key);
  if (req == requests_.end()) {
    sends_.emplace(std::move(key), std::move(send));
    return {};
  }
  const RankId peer = req->second;
  requests_.erase(req);
  stats_.path(Mv2Path::kRecvBeforeSend);
  serve(peer, key, std::move(send));
  return {};
}

void Mv2Rendezvous::recv(RankId src, std::string_view name, uint64_t step_id, RecvArgs args,
                             RecvDone done) {
  PendingRecv pending{args, std::move(done)};
  if (auto it = aborted_steps_.find(step_id); it != aborted_steps_.end()) {
    return deliver(std::move(pending), it->second, {}, RecvState::kRequested);
  }
  if (src >= peers_.size() || peers_[src] == nullptr) {
    return deliver(std::move(pending),
                   Status(StatusCode::kInvalidArgument,
                          "mvapich2_gpu: Recv from rank " + std::to_string(src) +
                              ": this rank has no channel to it (itself, outside the "
                              "cluster, or not a peer of the workload)"),
                   {}, RecvState::kRequested);
  }
  if (channel(src).failed()) {
    return deliver(std::move(pending), channel(src).failure(), {}, RecvState::kRequested);
  }
  Message m;
  m.type = MessageType::kRequest;
  m.name = std::string(name);
  m.step_id = step_id;
  recvs_.emplace(RecvKey{src, m.name, step_id}, std::move(pending));
  channel(src).send(std::move(m));
  check_channel(src);
}

void Mv2Rendezvous::on_request(const Arrival& a) {
  Key key{a.message.name, a.message.step_id};
  if (auto it = aborted_steps_.find(key.second); it != aborted_steps_.end()) {
    return send_error(a.peer, key, it->second);
  }
  if (auto f = failed_sends_.find(key); f != failed_sends_.end()) {
    const Status why = f->second;
    failed_sends_.erase(f);
    return send_error(a.peer, key, why);
  }
  auto it = sends_.find(key);
  if (it == sends_.end()) {
    requests_[key] = a.peer;
    return;
  }
  PendingSend send = std::move(it->second);
  sends_.erase(it);
  stats_.path(Mv2Path::kSendBeforeRecv);
  serve(a.peer, key, std::move(send));
}

void Mv2Rendezvous::serve(RankId peer, const Key& key, PendingSend send) {
  if (channel(peer).failed()) {
    stats_.send_moved(SendState::kWaiting, SendState::kFailed);
    if (send.done) send.done(channel(peer).failure());
    return;
  }
  const uint64_t bytes = send.tensor.is_dead ? 0 : send.tensor.total_bytes();
  if (bytes <= options_.eager_max_bytes || bytes == 0) {
    serve_eager(peer, key, std::move(send));
  } else {
    serve_rendezvous(peer, key, std::move(send));
  }
}

// The content goes inline: copied to host memory the protocol owns first, so
// the caller's buffer is free at once, and into the send slot when the
// message goes (it may wait for a credit).
void Mv2Rendezvous::serve_eager(RankId peer, const Key& key, PendingSend send) {
  const Tensor& t = send.tensor;
  const uint64_t bytes = t.is_dead ? 0 : t.total_bytes();
  if (bytes == 0) {
    stats_.path(Mv2Path::kDeadOrEmpty);
    send_eager(peer, key, t, Buffer{});
    stats_.send_moved(SendState::kWaiting, SendState::kReleased);
    if (send.done) send.done(Status::ok());
    return;
  }
  Result<Buffer> copy = allocate(MemoryKind::kHostPinned, 0, bytes);
  if (!copy) {
    send_error(peer, key, copy.status());
    stats_.send_moved(SendState::kWaiting, SendState::kFailed);
    if (send.done) send.done(copy.status());
    return;
  }
  if (is_host(t.buffer.kind)) {
    Status s = env_.memory.cpu_copy(*copy, 0, t.buffer, 0, bytes);
    TW_ASSERT_MSG(s.is_ok(), "a tensor's buffer holds its bytes");
    send_eager(peer, key, t, *copy);
    stats_.send_moved(SendState::kWaiting, SendState::kReleased);
    if (send.done) send.done(Status::ok());
    return;
  }
  stats_.path(Mv2Path::kEagerFromDevice);
  ++copies_in_flight_;
  stats_.copies += 1;
  const Buffer host = *copy;
  auto shared = std::make_shared<PendingSend>(std::move(send));
  Status submitted = env_.copy_engine.submit(host, 0, t.buffer, 0, bytes,
                                             [this, peer, key, host, shared](Status s) {
    --copies_in_flight_;
    if (s.is_ok()) send_eager(peer, key, shared->tensor, host);
    if (!s.is_ok()) {
      free_buffer(host);
      send_error(peer, key, s);
    }
    stats_.send_moved(SendState::kWaiting, s.is_ok() ? SendState::kReleased : SendState::kFailed);
    if (shared->done) shared->done(s);
  });
  TW_ASSERT_MSG(submitted.is_ok(), "a copy between live buffers is accepted");
}

void Mv2Rendezvous::send_eager(RankId peer, const Key& key, const Tensor& t, Buffer content) {
  Message m = tensor_message(MessageType::kEager, key, t);
  if (m.tensor_bytes > 0) stats_.path(Mv2Path::kEagerInline);
  stats_.inline_bytes += m.tensor_bytes;
  channel(peer).send(std::move(m), InlineContent{content});
  check_channel(peer);
}

Message Mv2Rendezvous::tensor_message(MessageType type, const Key& key, const Tensor& t) {
  Message m;
  m.type = type;
  m.name = key.first;
  m.step_id = key.second;
  m.is_dead = t.is_dead;
  m.dtype = t.dtype;
  m.shape = t.shape;
  m.tensor_bytes = t.is_dead ? 0 : t.total_bytes();
  return m;
}

Tensor Mv2Rendezvous::tensor_of(const Message& m, const Buffer& buffer) {
  Tensor t;
  t.dtype = m.dtype;
  t.shape = m.shape;
  t.is_dead = m.is_dead;
  t.buffer = buffer;
  return t;
}

void Mv2Rendezvous::send_error(RankId peer, const Key& key, const Status& why, uint32_t transfer,
                               bool from_sender) {
  TW_ASSERT(!why.is_ok());
  Message m;
  m.type = MessageType::kError;
  m.name = key.first;
  m.step_id = key.second;
  m.transfer = transfer;
  m.flag = from_sender;
  m.error_code = why.code();
  m.error_message = why.message().substr(0, kMaxErrorMessageBytes);
  channel(peer).send(std::move(m));
}

void Mv2Rendezvous::on_eager(const Arrival& a) {
  const Message& m = a.message;
  auto it = recvs_.find(RecvKey{a.peer, m.name, m.step_id});
  if (it == recvs_.end()) {
    stats_.unexpected_messages += 1;  // its Recv was aborted meanwhile
    return;
  }
  PendingRecv recv = std::move(it->second);
  recvs_.erase(it);
  Result<Buffer> dst = allocate(recv.args.dst_kind, recv.args.dst_device, m.tensor_bytes);
  if (!dst) return deliver(std::move(recv), dst.status(), {}, RecvState::kRequested);
  Tensor t = tensor_of(m, *dst);
  if (m.tensor_bytes == 0) return deliver(std::move(recv), {}, t, RecvState::kRequested);
  if (is_host(dst->kind)) {
    Status s = env_.memory.cpu_copy(*dst, 0, a.slot, a.payload_offset, m.tensor_bytes);
    TW_ASSERT_MSG(s.is_ok(), "decode checked the content lies in the slot");
    return deliver(std::move(recv), {}, t, RecvState::kRequested);
  }
  // A GPU: out of the slot now (it is re-posted when this returns), then the
  // copy engine.
  Result<Buffer> host = allocate(MemoryKind::kHostPinned, 0, m.tensor_bytes);
  if (!host) {
    free_buffer(*dst);
    return deliver(std::move(recv), host.status(), {}, RecvState::kRequested);
  }
  Status s = env_.memory.cpu_copy(*host, 0, a.slot, a.payload_offset, m.tensor_bytes);
  TW_ASSERT_MSG(s.is_ok(), "decode checked the content lies in the slot");
  stats_.path(Mv2Path::kEagerToDevice);
  stats_.recv_moved(RecvState::kRequested, RecvState::kCopying);
  ++copies_in_flight_;
  stats_.copies += 1;
  const Buffer staged = *host;
  auto shared = std::make_shared<PendingRecv>(std::move(recv));
  Status submitted = env_.copy_engine.submit(*dst, 0, staged, 0, m.tensor_bytes,
                                             [this, staged, shared, t](Status st) {
    --copies_in_flight_;
    free_buffer(staged);
    if (!st.is_ok()) free_buffer(t.buffer);
    deliver(std::move(*shared), st, st.is_ok() ? t : Tensor{}, RecvState::kCopying);
  });
  TW_ASSERT_MSG(submitted.is_ok(), "a copy between live buffers is accepted");
}

void Mv2Rendezvous::on_error(const Arrival& a) {
  const Message& m = a.message;
  const Status why(m.error_code, "rank " + std::to_string(a.peer) + ": " + m.error_message);
  if (m.transfer != 0 && m.flag) {  // the sender ended its rendezvous
    auto it = in_.find(InKey{a.peer, m.transfer});
    if (it == in_.end()) {
      stats_.unexpected_messages += 1;
      return;
    }
    return fail_in(*it->second, why);
  }
  if (m.transfer != 0) {  // the receiver refused or ended ours
    auto it = out_.find(m.transfer);
    if (it == out_.end() || it->second->peer != a.peer) {
      stats_.unexpected_messages += 1;
      return;
    }
    return fail_out(*it->second, why);
  }
  auto it = recvs_.find(RecvKey{a.peer, m.name, m.step_id});
  if (it == recvs_.end()) {
    stats_.unexpected_messages += 1;
    return;
  }
  PendingRecv recv = std::move(it->second);
  recvs_.erase(it);
  deliver(std::move(recv), why, {}, RecvState::kRequested);
}

// Runs a Recv's callback, exactly once: every path that ends a Recv comes here.
void Mv2Rendezvous::deliver(PendingRecv recv, Status status, Tensor tensor, RecvState from) {
  // Failed: no content reached this rank. A copy that fails still delivers
  // (its callback gets the copy's error).
  const bool delivered = status.is_ok() || from == RecvState::kCopying;
  stats_.recv_moved(from, delivered ? RecvState::kDelivered : RecvState::kFailed);
  if (recv.done) recv.done(std::move(status), std::move(tensor));
}

void Mv2Rendezvous::fail_peer(RankId p, const Status& why) {
  stats_.path(Mv2Path::kChannelFailed);
  std::vector<PendingRecv> failed;
  for (auto it = recvs_.begin(); it != recvs_.end();) {
    if (std::get<0>(it->first) != p) {
      ++it;
      continue;
    }
    failed.push_back(std::move(it->second));
    it = recvs_.erase(it);
  }
  for (auto it = requests_.begin(); it != requests_.end();) {
    it = it->second == p ? requests_.erase(it) : std::next(it);
  }
  peer(p).queued_writes.clear();
  std::vector<uint32_t> outs;
  for (auto& [id, t] : out_) {
    if (t->peer == p) outs.push_back(id);
  }
  for (uint32_t id : outs) fail_out(*out_.at(id), why);
  std::vector<InKey> ins;
  for (auto& [key, t] : in_) {
    if (key.first == p) ins.push_back(key);
  }
  for (const InKey& key : ins) fail_in(*in_.at(key), why);
  for (PendingRecv& r : failed) deliver(std::move(r), why, {}, RecvState::kRequested);
  // A Send names no destination: one nobody asked for yet could be for any
  // peer, so it fails only once no peer is left to ask.
  if (live_peers() > 0) return;
  std::map<Key, PendingSend> orphans = std::move(sends_);
  sends_.clear();
  for (auto& [key, s] : orphans) {
    stats_.send_moved(SendState::kWaiting, SendState::kFailed);
    if (s.done) s.done(why);
  }
}

size_t Mv2Rendezvous::live_peers() const {
  size_t n = 0;
  for (RankId p : open_peers_) n += peers_[p]->channel.failed() ? 0 : 1;
  return n;
}

void Mv2Rendezvous::abort_step(uint64_t step_id, Status why) {
  TW_ASSERT(!why.is_ok());
  aborted_steps_.emplace(step_id, why);
  std::vector<PendingRecv> recvs;
  for (auto it = recvs_.begin(); it != recvs_.end();) {
    if (std::get<2>(it->first) != step_id) {
      ++it;
      continue;
    }
    recvs.push_back(std::move(it->second));
    it = recvs_.erase(it);
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
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (it->first.second != step_id) {
      ++it;
      continue;
    }
    send_error(it->second, it->first, why);
    it = requests_.erase(it);
  }
  // A rendezvous under way runs to its end (its vbufs and the user's buffer
  // stay in use until the last block); the Recv then reports the abort.
  if (!recvs.empty() || !sends.empty()) stats_.path(Mv2Path::kStepAborted);
  for (PendingRecv& r : recvs) deliver(std::move(r), why, {}, RecvState::kRequested);
  for (PendingSend& s : sends) {
    stats_.send_moved(SendState::kWaiting, SendState::kFailed);
    if (s.done) s.done(why);
  }
}

Status Mv2Rendezvous::fail_send(std::string_view name, uint64_t step_id, Status why) {
  TW_ASSERT(!why.is_ok());
  Key key{std::string(name), step_id};
  if (sends_.count(key) != 0) {
    return Status(StatusCode::kInvalidArgument,
                  "mvapich2_gpu: fail_send of " + key.first + ", which was sent");
  }
  stats_.path(Mv2Path::kSendFailed);
  if (auto it = requests_.find(key); it != requests_.end()) {
    send_error(it->second, key, why);
    requests_.erase(it);
    return {};
  }
  failed_sends_.emplace(std::move(key), std::move(why));
  return {};
}

void Mv2Rendezvous::release(const Tensor& tensor) { free_buffer(tensor.buffer); }

Result<Buffer> Mv2Rendezvous::allocate(MemoryKind kind, uint32_t device, uint64_t bytes) {
  return env_.memory.allocate(kind, is_device(kind) ? device : 0, bytes);
}

void Mv2Rendezvous::free_buffer(const Buffer& b) { env_.memory.free(b); }

// A Send no Recv has asked for is not work in flight: it waits in the table,
// as in TensorFlow's rendezvous, for a request that may never come. What is
// counted here is what the protocol itself still has going.
size_t Mv2Rendezvous::outstanding_work() const {
  return recvs_.size() + out_.size() + in_.size() + copies_in_flight_;
}

uint64_t Mv2Rendezvous::state_digest() const {
  StateDigest d;
  d.add(started_ ? 1 : 0).add(next_transfer_).add(next_write_).add(copies_in_flight_);
  for (const auto& p : peers_) {
    if (p == nullptr) continue;
    const EagerChannel& ch = p->channel;
    d.add(ch.failed() ? 1 : 0).add(ch.receives_posted()).add(ch.credits()).add(ch.queued());
    d.add(p->send_vbufs.free_count()).add(p->recv_vbufs.free_count()).add(p->queued_writes.size());
  }
  d.add(sends_.size());
  for (const auto& [key, s] : sends_) d.add(key.first).add(key.second).add(s.tensor.buffer.addr);
  d.add(requests_.size());
  for (const auto& [key, p] : requests_) d.add(key.first).add(key.second).add(p);
  d.add(failed_sends_.size());
  for (const auto& [key, why] : failed_sends_) d.add(key.first).add(key.second);
  d.add(aborted_steps_.size());
  for (const auto& [step, why] : aborted_steps_) d.add(step);
  d.add(recvs_.size());
  for (const auto& [key, r] : recvs_) d.add(std::get<0>(key)).add(std::get<1>(key)).add(std::get<2>(key));
  d.add(out_.size());
  for (const auto& [id, t] : out_) {
    d.add(id).add(t->peer).add(t->block_bytes).add(t->finished).add(t->writes_in_flight);
    for (const auto& b : t->blocks) d.add(static_cast<uint64_t>(b.state)).add(b.has_dst ? b.dst : 0);
  }
  d.add(in_.size());
  for (const auto& [key, t] : in_) {
    d.add(key.first).add(key.second).add(t->next_offer).add(t->done).add(t->copies_in_flight);
    for (const auto& b : t->blocks) d.add(static_cast<uint64_t>(b.state)).add(b.offered ? 1 : 0);
  }
  return d.value();
}

ProtocolCounters Mv2Rendezvous::counters() const {
  std::array<uint64_t, kMessageTypes> sent{};
  uint64_t credit_waits = 0;
  uint64_t malformed = 0;
  for (const auto& p : peers_) {
    if (p == nullptr) continue;
    for (size_t i = 0; i < kMessageTypes; ++i) sent[i] += p->channel.sent[i];
    credit_waits += p->channel.credit_waits;
    malformed += p->channel.malformed;
  }
  ProtocolCounters c;
  for (size_t i = 0; i < kMessageTypes; ++i) {
    std::string name = std::string(message_type_name(static_cast<MessageType>(i + 1))) + "_sent";
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    c.push_back({name, CounterRole::kControlMessage, sent[i]});
  }
  c.push_back({"rdma_writes", CounterRole::kContentTransfer, stats_.rdma_writes});
  c.push_back({"bytes_written", CounterRole::kOther, stats_.bytes_written});
  c.push_back({"inline_bytes", CounterRole::kOther, stats_.inline_bytes});
  c.push_back({"copies", CounterRole::kCopy, stats_.copies});
  c.push_back({"registrations", CounterRole::kRegistration, stats_.registrations});
  c.push_back({"credit_waits", CounterRole::kOther, credit_waits});
  c.push_back({"malformed_messages", CounterRole::kProblem, malformed});
  c.push_back({"unexpected_messages", CounterRole::kProblem, stats_.unexpected_messages});
  c.push_back({"protocol_errors", CounterRole::kProblem, stats_.protocol_errors});
  return c;
}

std::vector<TransitionTable> Mv2Rendezvous::transition_tables() const {
  return {stats_.send_machine, stats_.recv_machine, stats_.send_block_machine,
          stats_.recv_block_machine};
}

void Mv2Rendezvous::add_coverage(Coverage& into) const {
  std::array<uint64_t, kMessageTypes> sent{};
  std::array<uint64_t, kMessageTypes> received{};
  Mv2Stats stats = stats_;
  for (const auto& p : peers_) {
    if (p == nullptr) continue;
    for (size_t i = 0; i < kMessageTypes; ++i) {
      sent[i] += p->channel.sent[i];
      received[i] += p->channel.received[i];
    }
    stats.path(Mv2Path::kCreditWait, p->channel.credit_waits);
    stats.path(Mv2Path::kCreditPiggybacked, p->channel.credits_piggybacked);
  }
  add_mv2_coverage(into, stats, sent, received);
}

}  // namespace tensorwire::mvapich2
