#include "core/protocols/oneflow_commnet/commnet_rendezvous.h"

#include <utility>

#include "core/assert.h"
#include "core/protocols/oneflow_commnet/read_job.h"
#include "core/protocols/oneflow_commnet/work_request_id.h"
#include "core/state_digest.h"

namespace tensorwire::oneflow {

CommNetRendezvous::CommNetRendezvous(RankEnv env, const CommNetOptions& options)
    : env_(env), options_(options) {}

CommNetRendezvous::~CommNetRendezvous() {
  // What a broken run left behind; channels free their own pools.
  for (auto& [id, job] : reads_) {
    if (job->region.length > 0) (void)env_.nic.deregister_memory(job->region);
  }
  for (auto& [id, token] : tokens_) (void)env_.nic.deregister_memory(token.region);
}

Status CommNetRendezvous::start() {
  TW_ASSERT_MSG(!started_, "start() is called once");
  started_ = true;
  const uint32_t world = env_.nic.world_size();
  channels_.resize(world);
  peer_failed_.assign(world, false);
  // A start() that fails half-way leaves only the channels it made open.
  for (RankId peer : channel_peers(options_.channels, env_)) {
    channels_[peer] =
        std::make_unique<EagerChannel>(env_, peer, eager_config_of(options_), skip_repost_of(options_));
    open_peers_.push_back(peer);
    install_handlers(*channels_[peer]);
    if (Status s = channels_[peer]->start(); !s.is_ok()) return s;
  }
  env_.nic.set_completion_handler([this](const Completion& c) { on_completion(c); });
  return {};
}

void CommNetRendezvous::install_handlers(EagerChannel& ch) {
  ch.on_handler(MessageType::kRequest, [this](const Arrival& a) { on_request(a); });
  ch.on_handler(MessageType::kEagerTensor, [this](const Arrival& a) { on_eager_tensor(a); });
  ch.on_handler(MessageType::kDescriptor, [this](const Arrival& a) { on_descriptor(a); });
  ch.on_handler(MessageType::kReadDone, [this](const Arrival& a) { on_read_done(a); });
  ch.on_handler(MessageType::kError, [this](const Arrival& a) { on_error(a); });
}

EagerChannel& CommNetRendezvous::channel(RankId peer) {
  TW_ASSERT_MSG(peer < channels_.size() && channels_[peer] != nullptr, "a peer, not this rank");
  return *channels_[peer];
}

void CommNetRendezvous::on_completion(const Completion& c) {
  const WorkRequestId id = WorkRequestId::unpack(c.wr_id);
  TW_ASSERT_MSG(id.peer == c.peer, "a work request completes on its own peer's queue pair");
  switch (id.kind) {
    case WorkKind::kReceive:
      channel(id.peer).on_receive(c, id.index);
      if (!channel(id.peer).failed()) {
        audit({AuditKind::kReceivesPosted, id.peer, 0, options_.receive_pool_size,
               channel(id.peer).receives_posted()});
      }
      break;
    case WorkKind::kSend: channel(id.peer).on_send(c, id.index); break;
    case WorkKind::kRead: on_read_completion(c, id.index); break;
  }
  check_channel(id.peer);
  // A full send queue may have held back reads or messages to any peer.
  for (RankId peer : open_peers_) channels_[peer]->pump();
  std::vector<uint32_t> waiting;
  for (const auto& [job_id, job] : reads_) {
    if (!job->failed() && job->next_offset < job->length &&
        job->in_flight < options_.max_reads_in_flight) {
      waiting.push_back(job_id);
    }
  }
  for (uint32_t job_id : waiting) {
    if (reads_.count(job_id) != 0) post_reads(job_id);
  }
}

void CommNetRendezvous::check_channel(RankId peer) {
  if (peer_failed_[peer] || !channel(peer).failed()) return;
  peer_failed_[peer] = true;
  fail_peer(peer, channel(peer).failure());
}

Status CommNetRendezvous::send(std::string_view name, uint64_t step_id, Tensor tensor,
                               SendDone done) {
  if (auto it = aborted_steps_.find(step_id); it != aborted_steps_.end()) return it->second;
  if (!is_dma_able(tensor.dtype)) {
    return Status(StatusCode::kInvalidArgument,
                  "oneflow_commnet: " + std::string(name) + ": string tensors are not carried");
  }
  if (started_ && live_peers() == 0) {
    return Status(StatusCode::kPeerGone, "oneflow_commnet: " + std::string(name) +
                                             ": every peer's channel has failed");
  }
  Key key{std::string(name), step_id};
  if (sends_.count(key) != 0 || failed_sends_.count(key) != 0) {
    return Status(StatusCode::kInvalidArgument, "oneflow_commnet: " + key.first +
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
  stats_.path(CommNetPath::kRecvBeforeSend);
  serve(peer, key, std::move(send));
  return {};
}

void CommNetRendezvous::recv(RankId src, std::string_view name, uint64_t step_id, RecvArgs args,
                             RecvDone done) {
  const uint32_t serial = next_recv_serial_++;
  PendingRecv pending{args, std::move(done), serial};
  if (auto it = aborted_steps_.find(step_id); it != aborted_steps_.end()) {
    return deliver(src, std::move(pending), it->second, {}, RecvState::kRequested);
  }
  if (src >= channels_.size() || channels_[src] == nullptr) {
    return deliver(src, std::move(pending),
                   Status(StatusCode::kInvalidArgument,
                          "oneflow_commnet: Recv from rank " + std::to_string(src) +
                              ": this rank has no channel to it (itself, outside the "
                              "cluster, or not a peer of the workload)"),
                   {}, RecvState::kRequested);
  }
  if (channel(src).failed()) {
    return deliver(src, std::move(pending), channel(src).failure(), {}, RecvState::kRequested);
  }
  Message m;
  m.type = MessageType::kRequest;
  m.name = std::string(name);
  m.step_id = step_id;
  recvs_.emplace(RecvKey{src, m.name, step_id}, std::move(pending));
  channel(src).send(std::move(m));
  check_channel(src);
}

void CommNetRendezvous::on_request(const Arrival& a) {
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
  stats_.path(CommNetPath::kSendBeforeRecv);
  serve(a.peer, key, std::move(send));
}

void CommNetRendezvous::serve(RankId peer, const Key& key, PendingSend send) {
  if (channel(peer).failed()) {
    stats_.send_moved(SendState::kWaiting, SendState::kFailed);
    if (send.done) send.done(channel(peer).failure());
    return;
  }
  const uint64_t bytes = send.tensor.is_dead ? 0 : send.tensor.total_bytes();
  if (bytes <= options_.eager_max_bytes || bytes == 0) {
    serve_eager(peer, key, std::move(send));
  } else {
    serve_long(peer, key, std::move(send));
  }
}

// The content goes inline: copied to host memory the protocol owns first, so
// the caller's buffer is free at once, and into the send slot when the
// message goes (it may wait for a credit).
void CommNetRendezvous::serve_eager(RankId peer, const Key& key, PendingSend send) {
  const Tensor& t = send.tensor;
  const uint64_t bytes = t.is_dead ? 0 : t.total_bytes();
  if (bytes == 0) {
    stats_.path(CommNetPath::kDeadOrEmpty);
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

void CommNetRendezvous::send_eager(RankId peer, const Key& key, const Tensor& t, Buffer content) {
  Message m = tensor_message(MessageType::kEagerTensor, key, t);
  if (m.tensor_bytes > 0) stats_.path(CommNetPath::kEagerInline);
  stats_.inline_bytes += m.tensor_bytes;
  channel(peer).send(std::move(m), InlineContent{content});
  check_channel(peer);
}

Message CommNetRendezvous::tensor_message(MessageType type, const Key& key, const Tensor& t) {
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

Tensor CommNetRendezvous::tensor_of(const Message& m, const Buffer& buffer) {
  Tensor t;
  t.dtype = m.dtype;
  t.shape = m.shape;
  t.is_dead = m.is_dead;
  t.buffer = buffer;
  return t;
}

void CommNetRendezvous::send_error(RankId peer, const Key& key, const Status& why) {
  TW_ASSERT(!why.is_ok());
  Message m;
  m.type = MessageType::kError;
  m.name = key.first;
  m.step_id = key.second;
  m.error_code = why.code();
  m.error_message = why.message().substr(0, kMaxErrorMessageBytes);
  channel(peer).send(std::move(m));
}

void CommNetRendezvous::on_eager_tensor(const Arrival& a) {
  const Message& m = a.message;
  auto it = recvs_.find(RecvKey{a.peer, m.name, m.step_id});
  if (it == recvs_.end()) {
    stats_.unexpected_messages += 1;  // its Recv was aborted meanwhile
    return;
  }
  PendingRecv recv = std::move(it->second);
  recvs_.erase(it);
  Result<Buffer> dst = allocate(recv.args.dst_kind, recv.args.dst_device, m.tensor_bytes);
  if (!dst) return deliver(a.peer, std::move(recv), dst.status(), {}, RecvState::kRequested);
  Tensor t = tensor_of(m, *dst);
  if (m.tensor_bytes == 0) return deliver(a.peer, std::move(recv), {}, t, RecvState::kRequested);
  if (is_host(dst->kind)) {
    Status s = env_.memory.cpu_copy(*dst, 0, a.slot, a.payload_offset, m.tensor_bytes);
    TW_ASSERT_MSG(s.is_ok(), "decode checked the content lies in the slot");
    return deliver(a.peer, std::move(recv), {}, t, RecvState::kRequested);
  }
  // A GPU: out of the slot now (it is re-posted when this returns), then the
  // copy engine.
  Result<Buffer> host = allocate(MemoryKind::kHostPinned, 0, m.tensor_bytes);
  if (!host) {
    free_buffer(*dst);
    return deliver(a.peer, std::move(recv), host.status(), {}, RecvState::kRequested);
  }
  Status s = env_.memory.cpu_copy(*host, 0, a.slot, a.payload_offset, m.tensor_bytes);
  TW_ASSERT_MSG(s.is_ok(), "decode checked the content lies in the slot");
  stats_.path(CommNetPath::kEagerToDevice);
  stats_.recv_moved(RecvState::kRequested, RecvState::kCopying);
  ++copies_in_flight_;
  stats_.copies += 1;
  const RankId src = a.peer;
  const Buffer staged = *host;
  auto shared = std::make_shared<PendingRecv>(std::move(recv));
  Status submitted = env_.copy_engine.submit(*dst, 0, staged, 0, m.tensor_bytes,
                                             [this, src, staged, shared, t](Status st) {
    --copies_in_flight_;
    free_buffer(staged);
    if (!st.is_ok()) free_buffer(t.buffer);
    deliver(src, std::move(*shared), st, st.is_ok() ? t : Tensor{}, RecvState::kCopying);
  });
  TW_ASSERT_MSG(submitted.is_ok(), "a copy between live buffers is accepted");
}

void CommNetRendezvous::on_error(const Arrival& a) {
  const Message& m = a.message;
  auto it = recvs_.find(RecvKey{a.peer, m.name, m.step_id});
  if (it == recvs_.end()) {
    stats_.unexpected_messages += 1;
    return;
  }
  PendingRecv recv = std::move(it->second);
  recvs_.erase(it);
  deliver(a.peer, std::move(recv), Status(m.error_code, "rank " + std::to_string(a.peer) + ": " +
                                                           m.error_message),
          {}, RecvState::kRequested);
}

// Runs a Recv's callback, exactly once: every path that ends a Recv comes here.
void CommNetRendezvous::deliver(RankId src, PendingRecv recv, Status status, Tensor tensor,
                                RecvState from) {
  // Failed: no content reached this rank. A copy that fails still delivers
  // (its callback gets the copy's error).
  const bool delivered = status.is_ok() || from == RecvState::kCopying;
  stats_.recv_moved(from, delivered ? RecvState::kDelivered : RecvState::kFailed);
  audit({AuditKind::kRecvCallback, src, recv.serial, 0, 0});
  if (recv.done) recv.done(std::move(status), std::move(tensor));
}

void CommNetRendezvous::fail_peer(RankId peer, const Status& why) {
  stats_.path(CommNetPath::kChannelFailed);
  std::vector<PendingRecv> failed;
  for (auto it = recvs_.begin(); it != recvs_.end();) {
    if (std::get<0>(it->first) != peer) {
      ++it;
      continue;
    }
    failed.push_back(std::move(it->second));
    it = recvs_.erase(it);
  }
  for (auto it = requests_.begin(); it != requests_.end();) {
    it = it->second == peer ? requests_.erase(it) : std::next(it);
  }
  fail_reads_and_tokens(peer, why);
  for (PendingRecv& r : failed) deliver(peer, std::move(r), why, {}, RecvState::kRequested);
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

size_t CommNetRendezvous::live_peers() const {
  size_t n = 0;
  for (RankId peer : open_peers_) n += channels_[peer]->failed() ? 0 : 1;
  return n;
}

void CommNetRendezvous::abort_step(uint64_t step_id, Status why) {
  TW_ASSERT(!why.is_ok());
  aborted_steps_.emplace(step_id, why);
  std::vector<std::pair<RankId, PendingRecv>> recvs;
  for (auto it = recvs_.begin(); it != recvs_.end();) {
    if (std::get<2>(it->first) != step_id) {
      ++it;
      continue;
    }
    recvs.emplace_back(std::get<0>(it->first), std::move(it->second));
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
  // Reads in flight finish (their destination stays theirs until the last
  // read lands) and report the abort; tokens live until READ_DONE.
  std::vector<uint32_t> idle;
  for (auto& [id, job] : reads_) {
    if (job->key.second != step_id) continue;
    if (!job->failed()) job->failure = why;
    if (job->in_flight == 0) idle.push_back(id);
  }
  for (uint32_t id : idle) end_job(id, why);
  if (!recvs.empty() || !sends.empty()) stats_.path(CommNetPath::kStepAborted);
  for (auto& [src, r] : recvs) deliver(src, std::move(r), why, {}, RecvState::kRequested);
  for (PendingSend& s : sends) {
    stats_.send_moved(SendState::kWaiting, SendState::kFailed);
    if (s.done) s.done(why);
  }
}

Status CommNetRendezvous::fail_send(std::string_view name, uint64_t step_id, Status why) {
  TW_ASSERT(!why.is_ok());
  Key key{std::string(name), step_id};
  if (sends_.count(key) != 0) {
    return Status(StatusCode::kInvalidArgument,
                  "oneflow_commnet: fail_send of " + key.first + ", which was sent");
  }
  stats_.path(CommNetPath::kSendFailed);
  if (auto it = requests_.find(key); it != requests_.end()) {
    send_error(it->second, key, why);
    requests_.erase(it);
    return {};
  }
  failed_sends_.emplace(std::move(key), std::move(why));
  return {};
}

void CommNetRendezvous::release(const Tensor& tensor) { free_buffer(tensor.buffer); }

Result<Buffer> CommNetRendezvous::allocate(MemoryKind kind, uint32_t device, uint64_t bytes) {
  return env_.memory.allocate(kind, is_device(kind) ? device : 0, bytes);
}

void CommNetRendezvous::free_buffer(const Buffer& b) { env_.memory.free(b); }

// A Send no Recv has asked for is not work in flight: it waits in the table,
// as in TensorFlow's rendezvous, for a request that may never come (its
// receiver aborted the step before asking). A Recv that never ends is caught
// as such; what is counted here is what the protocol itself still has going.
size_t CommNetRendezvous::outstanding_work() const {
  return recvs_.size() + tokens_.size() + reads_.size() + copies_in_flight_;
}

std::optional<uint32_t> CommNetRendezvous::receives_posted(RankId peer) const {
  if (peer >= channels_.size() || channels_[peer] == nullptr || channels_[peer]->failed()) {
    return std::nullopt;
  }
  return channels_[peer]->receives_posted();
}

uint64_t CommNetRendezvous::state_digest() const {
  StateDigest d;
  d.add(started_ ? 1 : 0).add(next_token_).add(next_job_).add(copies_in_flight_);
  for (const auto& ch : channels_) {
    if (ch == nullptr) continue;
    d.add(ch->failed() ? 1 : 0).add(ch->receives_posted()).add(ch->credits()).add(ch->queued());
  }
  d.add(sends_.size());
  for (const auto& [key, s] : sends_) d.add(key.first).add(key.second).add(s.tensor.buffer.addr);
  d.add(requests_.size());
  for (const auto& [key, peer] : requests_) d.add(key.first).add(key.second).add(peer);
  d.add(failed_sends_.size());
  for (const auto& [key, why] : failed_sends_) d.add(key.first).add(key.second);
  d.add(aborted_steps_.size());
  for (const auto& [step, why] : aborted_steps_) d.add(step);
  d.add(recvs_.size());
  for (const auto& [key, r] : recvs_) d.add(std::get<0>(key)).add(std::get<1>(key)).add(std::get<2>(key));
  d.add(tokens_.size());
  for (const auto& [id, t] : tokens_) d.add(id).add(t.peer).add(t.region.addr).add(t.region.length);
  d.add(reads_.size());
  for (const auto& [id, job] : reads_) {
    d.add(id).add(job->next_offset).add(job->bytes_done).add(job->in_flight);
    d.add(job->release_sent ? 1 : 0).add(static_cast<uint64_t>(job->failure.code()));
  }
  return d.value();
}

ProtocolCounters CommNetRendezvous::counters() const {
  std::array<uint64_t, kMessageTypes> sent{};
  uint64_t credit_waits = 0;
  uint64_t malformed = 0;
  for (const auto& ch : channels_) {
    if (ch == nullptr) continue;
    for (size_t i = 0; i < kMessageTypes; ++i) sent[i] += ch->sent[i];
    credit_waits += ch->credit_waits;
    malformed += ch->malformed;
  }
  ProtocolCounters c;
  for (size_t i = 0; i < kMessageTypes; ++i) {
    std::string name = std::string(message_type_name(static_cast<MessageType>(i + 1))) + "_sent";
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    c.push_back({name, CounterRole::kControlMessage, sent[i]});
  }
  c.push_back({"rdma_reads", CounterRole::kContentTransfer, stats_.rdma_reads});
  c.push_back({"bytes_read", CounterRole::kOther, stats_.bytes_read});
  c.push_back({"inline_bytes", CounterRole::kOther, stats_.inline_bytes});
  c.push_back({"copies", CounterRole::kCopy, stats_.copies});
  c.push_back({"registrations", CounterRole::kRegistration, stats_.registrations});
  c.push_back({"credit_waits", CounterRole::kOther, credit_waits});
  c.push_back({"malformed_messages", CounterRole::kProblem, malformed});
  c.push_back({"unexpected_messages", CounterRole::kProblem, stats_.unexpected_messages});
  return c;
}

std::vector<TransitionTable> CommNetRendezvous::transition_tables() const {
  return {stats_.send_machine, stats_.recv_machine};
}

void CommNetRendezvous::add_coverage(Coverage& into) const {
  std::array<uint64_t, kMessageTypes> sent{};
  std::array<uint64_t, kMessageTypes> received{};
  CommNetStats stats = stats_;
  for (const auto& ch : channels_) {
    if (ch == nullptr) continue;
    for (size_t i = 0; i < kMessageTypes; ++i) {
      sent[i] += ch->sent[i];
      received[i] += ch->received[i];
    }
    stats.path(CommNetPath::kCreditWait, ch->credit_waits);
    stats.path(CommNetPath::kCreditPiggybacked, ch->credits_piggybacked);
  }
  add_commnet_coverage(into, stats, sent, received);
}

}  // namespace tensorwire::oneflow
