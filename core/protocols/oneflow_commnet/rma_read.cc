// CommNet's RMA read, both ends: the sender registers a tensor (its access
// token) and describes it; the receiver reads it in chunks, a bounded number
// in flight, and sends READ_DONE after the last one completed.
#include <algorithm>
#include <utility>

#include "core/assert.h"
#include "core/protocols/oneflow_commnet/commnet_rendezvous.h"
#include "core/protocols/oneflow_commnet/read_job.h"
#include "core/protocols/oneflow_commnet/work_request_id.h"

namespace tensorwire::oneflow {

void CommNetRendezvous::serve_long(RankId peer, const Key& key, PendingSend send) {
  const Buffer source = send.tensor.buffer;
  if (is_nic_reachable(source.kind)) return publish_token(peer, key, std::move(send), source, {});
  // A GPU the NIC cannot reach: the token names a host copy.
  Result<Buffer> staging = allocate(MemoryKind::kHostPinned, 0, source.length);
  if (!staging) {
    send_error(peer, key, staging.status());
    stats_.send_moved(SendState::kWaiting, SendState::kFailed);
    if (send.done) send.done(staging.status());
    return;
  }
  stats_.path(CommNetPath::kStagingCopy);
  stats_.copies += 1;
  ++copies_in_flight_;
  const Buffer host = *staging;
  auto shared = std::make_shared<PendingSend>(std::move(send));
  Status submitted = env_.copy_engine.submit(host, 0, source, 0, source.length,
                                             [this, peer, key, host, shared](Status s) {
    --copies_in_flight_;
    if (s.is_ok()) return publish_token(peer, key, std::move(*shared), host, host);
    free_buffer(host);
    send_error(peer, key, s);
    stats_.send_moved(SendState::kWaiting, SendState::kFailed);
    if (shared->done) shared->done(s);
  });
  TW_ASSERT_MSG(submitted.is_ok(), "a copy between live buffers is accepted");
}

void CommNetRendezvous::publish_token(RankId peer, const Key& key, PendingSend send,
                                      Buffer nic_source, Buffer staging) {
  Status failure = channel(peer).failed() ? channel(peer).failure() : Status::ok();
  Result<MemoryRegion> region = Status(StatusCode::kInternal, "not registered");
  if (failure.is_ok()) {
    region = env_.nic.register_memory(nic_source, Access::kRemoteRead);
    if (!region) failure = region.status();
  }
  if (!failure.is_ok()) {
    if (staging.length > 0) free_buffer(staging);
    if (!channel(peer).failed()) send_error(peer, key, failure);
    stats_.send_moved(SendState::kWaiting, SendState::kFailed);
    if (send.done) send.done(failure);
    return;
  }
  stats_.registrations += 1;
  const uint32_t token = next_token_++;
  audit({AuditKind::kTokenRegistered, peer, token, nic_source.addr, nic_source.length});
  Message m = tensor_message(MessageType::kDescriptor, key, send.tensor);
  m.token = token;
  m.remote_addr = nic_source.addr;
  m.rkey = region->rkey;
  tokens_.emplace(token, Token{peer, key, staging, *region, std::move(send.done)});
  stats_.send_moved(SendState::kWaiting, SendState::kTokenLive);
  channel(peer).send(std::move(m));
  check_channel(peer);
}

void CommNetRendezvous::on_descriptor(const Arrival& a) {
  const Message& m = a.message;
  auto it = recvs_.find(RecvKey{a.peer, m.name, m.step_id});
  if (it == recvs_.end()) {
    // Its Recv was aborted meanwhile: nothing to read, the token may go.
    stats_.unexpected_messages += 1;
    return send_read_done(a.peer, m.token);
  }
  auto job = std::make_unique<ReadJob>();
  job->src = a.peer;
  job->token = m.token;
  job->key = Key{m.name, m.step_id};
  job->recv = std::move(it->second);
  recvs_.erase(it);
  job->remote_addr = m.remote_addr;
  job->rkey = m.rkey;
  job->length = m.tensor_bytes;
  Result<Buffer> dst = allocate(job->recv.args.dst_kind, job->recv.args.dst_device, m.tensor_bytes);
  Status failure = dst.status();
  if (dst) {
    job->result = tensor_of(m, *dst);
    job->proxy = !is_nic_reachable(dst->kind);
    Result<Buffer> landing = job->proxy ? allocate(MemoryKind::kHostPinned, 0, m.tensor_bytes) : *dst;
    failure = landing.status();
    if (landing) job->landing = *landing;
  }
  if (failure.is_ok()) {
    Result<MemoryRegion> region = env_.nic.register_memory(job->landing, Access::kLocalWrite);
    failure = region.status();
    if (region) job->region = *region;
  }
  const uint32_t id = next_job_++;
  reads_.emplace(id, std::move(job));
  if (!failure.is_ok()) {
    reads_.at(id)->failure = failure;
    return end_job(id, failure);
  }
  stats_.registrations += 1;
  stats_.path(CommNetPath::kRmaRead);
  if (reads_.at(id)->proxy) stats_.path(CommNetPath::kHostProxy);
  if (m.tensor_bytes > options_.read_chunk_bytes) stats_.path(CommNetPath::kSeveralChunks);
  stats_.recv_moved(RecvState::kRequested, RecvState::kReading);
  post_reads(id);
}

void CommNetRendezvous::post_reads(uint32_t job_id) {
  ReadJob& job = *reads_.at(job_id);
  while (!job.failed() && job.next_offset < job.length &&
         job.in_flight < options_.max_reads_in_flight) {
    const uint64_t chunk = std::min(options_.read_chunk_bytes, job.length - job.next_offset);
    SendWorkRequest wr;
    wr.wr_id = WorkRequestId{WorkKind::kRead, job.src, job_id}.pack();
    wr.opcode = WorkOpcode::kRdmaRead;
    wr.local = Sge{job.landing.addr + job.next_offset, static_cast<uint32_t>(chunk), job.region.lkey};
    wr.remote_addr = job.remote_addr + job.next_offset;
    wr.rkey = job.rkey;
    Status s = env_.nic.post_send(env_.nic.queue_pair_to(job.src), wr);
    if (s.code() == StatusCode::kNoResource) return;  // again on the next completion
    if (!s.is_ok()) {
      job.failure = s;
      break;
    }
    audit({AuditKind::kReadPosted, job.src, job.token, wr.remote_addr, chunk});
    ++job.in_flight;
    job.next_offset += chunk;
    stats_.rdma_reads += 1;
    if (job.next_offset == job.length && options_.planted_bug == PlantedBug::kReleaseAtReadPost) {
      send_read_done(job.src, job.token);
      job.release_sent = true;
    }
  }
  if (!job.failed() && job.next_offset < job.length) stats_.path(CommNetPath::kReadWaitsForSlot);
  if (job.failed() && job.in_flight == 0) end_job(job_id, job.failure);
}

void CommNetRendezvous::on_read_completion(const Completion& c, uint32_t job_id) {
  auto it = reads_.find(job_id);
  TW_ASSERT_MSG(it != reads_.end(), "a job lives until its last read completed");
  ReadJob& job = *it->second;
  TW_ASSERT(job.in_flight > 0);
  --job.in_flight;
  audit({AuditKind::kReadCompleted, job.src, job.token, 0, 0});
  if (c.status != CompletionStatus::kSuccess && !job.failed()) {
    job.failure = Status(c.status == CompletionStatus::kRemoteAccessError ? StatusCode::kRemoteAccess
                                                                           : StatusCode::kQpError,
                         "rdma read from rank " + std::to_string(job.src) + ": " +
                             completion_status_name(c.status));
  }
  if (job.failed()) {
    if (job.in_flight == 0) end_job(job_id, job.failure);
    return;
  }
  // Reads of one queue pair complete in the order they were posted.
  const uint64_t chunk = std::min(options_.read_chunk_bytes, job.length - job.bytes_done);
  job.bytes_done += chunk;
  stats_.bytes_read += chunk;
  if (job.bytes_done == job.length) return finish_read(job_id);
  post_reads(job_id);
}

void CommNetRendezvous::finish_read(uint32_t job_id) {
  std::unique_ptr<ReadJob> job = std::move(reads_.at(job_id));
  reads_.erase(job_id);
  TW_ASSERT(job->in_flight == 0);
  (void)env_.nic.deregister_memory(job->region);
  if (!job->release_sent) send_read_done(job->src, job->token);
  if (!job->proxy) {
    return deliver(job->src, std::move(job->recv), {}, job->result, RecvState::kReading);
  }
  stats_.recv_moved(RecvState::kReading, RecvState::kCopying);
  stats_.copies += 1;
  ++copies_in_flight_;
  const Buffer proxy = job->landing;
  const Tensor result = job->result;
  const RankId src = job->src;
  auto recv = std::make_shared<PendingRecv>(std::move(job->recv));
  Status submitted = env_.copy_engine.submit(result.buffer, 0, proxy, 0, job->length,
                                             [this, proxy, result, src, recv](Status s) {
    --copies_in_flight_;
    free_buffer(proxy);
    if (!s.is_ok()) free_buffer(result.buffer);
    deliver(src, std::move(*recv), s, s.is_ok() ? result : Tensor{}, RecvState::kCopying);
  });
  TW_ASSERT_MSG(submitted.is_ok(), "a copy between live buffers is accepted");
}

// A job that failed, once none of its reads is in flight: its memory goes,
// the sender hears the token may go, the Recv hears why.
void CommNetRendezvous::end_job(uint32_t job_id, Status status) {
  std::unique_ptr<ReadJob> job = std::move(reads_.at(job_id));
  reads_.erase(job_id);
  TW_ASSERT(job->in_flight == 0);
  if (job->region.length > 0) (void)env_.nic.deregister_memory(job->region);
  if (!job->release_sent) send_read_done(job->src, job->token);
  if (job->proxy && job->landing.length > 0) free_buffer(job->landing);
  if (job->result.buffer.length > 0) free_buffer(job->result.buffer);
  const RecvState from = job->region.length > 0 ? RecvState::kReading : RecvState::kRequested;
  deliver(job->src, std::move(job->recv), std::move(status), {}, from);
}

void CommNetRendezvous::send_read_done(RankId src, uint32_t token) {
  if (channel(src).failed()) return;
  audit({AuditKind::kReadDoneSent, src, token, 0, 0});
  Message m;
  m.type = MessageType::kReadDone;
  m.token = token;
  channel(src).send(std::move(m));
}

void CommNetRendezvous::on_read_done(const Arrival& a) {
  auto it = tokens_.find(a.message.token);
  if (it == tokens_.end() || it->second.peer != a.peer) {
    stats_.unexpected_messages += 1;  // a token this peer does not hold
    return;
  }
  release_token(a.message.token, Status::ok());
}

void CommNetRendezvous::release_token(uint32_t token, Status status) {
  auto it = tokens_.find(token);
  TW_ASSERT(it != tokens_.end());
  Token t = std::move(it->second);
  tokens_.erase(it);
  (void)env_.nic.deregister_memory(t.region);
  audit({AuditKind::kTokenReleased, t.peer, token, t.region.addr, t.region.length, !status.is_ok()});
  if (t.staging.length > 0) free_buffer(t.staging);
  stats_.send_moved(SendState::kTokenLive, status.is_ok() ? SendState::kReleased : SendState::kFailed);
  if (t.done) t.done(std::move(status));
}

void CommNetRendezvous::fail_reads_and_tokens(RankId peer, const Status& why) {
  std::vector<uint32_t> tokens;
  for (const auto& [id, t] : tokens_) {
    if (t.peer == peer) tokens.push_back(id);
  }
  for (uint32_t id : tokens) release_token(id, why);
  std::vector<uint32_t> idle;
  for (auto& [id, job] : reads_) {
    if (job->src != peer) continue;
    if (!job->failed()) job->failure = why;
    if (job->in_flight == 0) idle.push_back(id);  // the rest end with their flushed reads
  }
  for (uint32_t id : idle) end_job(id, why);
}

}  // namespace tensorwire::oneflow
