// The sender's side of a rendezvous: RTS; on each CTS, the destinations of
// its blocks; each block with a destination copied device-to-host into a
// vbuf (a source the NIC cannot reach) or taken straight from the user's
// buffer, written as soon as it is ready, and its FIN sent once the write
// completed. The user's buffer goes back after the last block's FIN.
#include <limits>
#include <utility>

#include "core/assert.h"
#include "core/protocols/mvapich2_gpu/rndv_transfer.h"
#include "core/protocols/mvapich2_gpu/work_request_id.h"

namespace tensorwire::mvapich2 {

void Mv2Rendezvous::serve_rendezvous(RankId p, const Key& key, PendingSend send) {
  auto t = std::make_unique<OutTransfer>();
  t->id = next_transfer_++;
  t->peer = p;
  t->key = key;
  t->bytes = send.tensor.total_bytes();
  t->staged = !is_nic_reachable(send.tensor.buffer.kind);
  Message m = tensor_message(MessageType::kRts, key, send.tensor);
  m.transfer = t->id;
  m.flag = t->staged;
  t->send = std::move(send);
  if (!t->staged) {
    // The NIC reads the user's buffer itself: registered for local reads.
    Result<MemoryRegion> r = env_.nic.register_memory(t->send.tensor.buffer, Access::kNone);
    if (!r) {
      send_error(p, key, r.status());
      stats_.send_moved(SendState::kWaiting, SendState::kFailed);
      if (t->send.done) t->send.done(r.status());
      return;
    }
    stats_.registrations += 1;
    t->src_region = *r;
  }
  stats_.path(Mv2Path::kRendezvous);
  stats_.path(t->staged ? Mv2Path::kStagedSource : Mv2Path::kDirectSource);
  stats_.send_moved(SendState::kWaiting, SendState::kRtsSent);
  out_.emplace(t->id, std::move(t));
  channel(p).send(std::move(m));
  check_channel(p);
}

void Mv2Rendezvous::on_cts(const Arrival& a) {
  auto it = out_.find(a.message.transfer);
  if (it == out_.end() || it->second->peer != a.peer || it->second->failed()) {
    stats_.unexpected_messages += 1;
    return;
  }
  OutTransfer& t = *it->second;
  if (Status s = accept_cts(t, a.message); !s.is_ok()) {
    // A peer that breaks the protocol is a peer this rank stops talking to.
    stats_.protocol_errors += 1;
    channel(a.peer).fail(std::move(s));
    return;
  }
  advance(t.id);
  pump_writes(a.peer);
}

// Checks a CTS against the transfer (outside bytes) and records where its
// blocks go. The first CTS fixes the block size the receiver chose.
Status Mv2Rendezvous::accept_cts(OutTransfer& t, const Message& m) {
  const std::string where = "mvapich2_gpu: CTS for transfer " + std::to_string(t.id) + ": ";
  if (t.block_bytes == 0) {
    if (m.block_bytes > kMaxBlockBytes) {
      return Status(StatusCode::kMalformedMessage, where + "block_bytes above the largest write");
    }
    t.block_bytes = m.block_bytes;
    t.blocks.resize((t.bytes + t.block_bytes - 1) / t.block_bytes);
    if (t.blocks.size() > 1) stats_.path(Mv2Path::kSeveralBlocks);
    stats_.send_moved(SendState::kRtsSent, SendState::kStreaming);
  } else if (m.block_bytes != t.block_bytes) {
    return Status(StatusCode::kMalformedMessage, where + "block_bytes changed");
  }
  if (m.flag) {
    if (m.block != 0 || m.addrs[0] > std::numeric_limits<uint64_t>::max() - t.bytes) {
      return Status(StatusCode::kMalformedMessage, where + "the user's buffer range is bad");
    }
  }
  const size_t count = m.flag ? t.blocks.size() : m.addrs.size();
  if (m.block >= t.blocks.size() || count > t.blocks.size() - m.block) {
    return Status(StatusCode::kMalformedMessage, where + "names blocks past the last");
  }
  for (size_t i = 0; i < count; ++i) {
    OutTransfer::Block& b = t.blocks[m.block + i];
    if (b.has_dst) return Status(StatusCode::kMalformedMessage, where + "a block offered twice");
    b.has_dst = true;
    b.dst = m.flag ? m.addrs[0] + (m.block + i) * t.block_bytes : m.addrs[i];
    b.rkey = m.rkey;
  }
  return {};
}

void Mv2Rendezvous::advance_peer(RankId p) {
  std::vector<uint32_t> ids;
  for (const auto& [id, t] : out_) {
    if (t->peer == p) ids.push_back(id);
  }
  for (uint32_t id : ids) {
    if (out_.count(id) != 0) advance(id);
  }
  pump_writes(p);
}

// Every block with a destination and no work yet starts: straight to the
// write queue from the user's buffer, or a copy into a vbuf first.
void Mv2Rendezvous::advance(uint32_t id) {
  OutTransfer& t = *out_.at(id);
  if (t.failed() || t.block_bytes == 0) return;
  for (uint32_t b = 0; b < t.blocks.size(); ++b) {
    OutTransfer::Block& block = t.blocks[b];
    if (block.state != SendBlockState::kWaiting || !block.has_dst) continue;
    if (!t.staged) {
      stats_.send_block_moved(SendBlockState::kWaiting, SendBlockState::kReady);
      block.state = SendBlockState::kReady;
      block_ready(t, b);
      continue;
    }
    if (!stage_block(t, b)) {
      if (t.failed()) return maybe_finish_out(id);
      stats_.path(Mv2Path::kBlockWaitsForVbuf);
      return;
    }
  }
}

// Takes a vbuf (or, naive, a whole-buffer staging entry) and starts the
// block's device-to-host copy into it; false when none is free or it failed.
bool Mv2Rendezvous::stage_block(OutTransfer& t, uint32_t b) {
  Peer& p = peer(t.peer);
  OutTransfer::Block& block = t.blocks[b];
  const uint64_t len = t.block_len(b);
  Buffer into;
  if (options_.staging == Staging::kPipelined && len <= options_.block_bytes) {
    if (Status s = p.send_vbufs.ensure(); !s.is_ok()) {
      t.failure = s;
      return false;
    }
    block.source.vbuf = p.send_vbufs.take();
    if (!block.source.vbuf) return false;
    into = p.send_vbufs.vbuf(*block.source.vbuf);
  } else {
    Result<uint32_t> id = p.send_staging.take(len);
    if (!id) {
      t.failure = id.status();
      return false;
    }
    stats_.path(Mv2Path::kNaiveStaging);
    block.source.cached = *id;
    into = p.send_staging.buffer(*id);
  }
  audit({AuditKind::kStagingFilled, t.peer, t.id, b, into.addr, len});
  stats_.send_block_moved(SendBlockState::kWaiting, SendBlockState::kCopyingToHost);
  block.state = SendBlockState::kCopyingToHost;
  ++copies_in_flight_;
  ++t.copies_in_flight;
  stats_.copies += 1;
  const uint32_t id = t.id;
  Status submitted = env_.copy_engine.submit(into, 0, t.send.tensor.buffer, b * t.block_bytes,
                                             len, [this, id, b](Status s) {
    --copies_in_flight_;
    OutTransfer& done = *out_.at(id);
    --done.copies_in_flight;
    stats_.send_block_moved(SendBlockState::kCopyingToHost, SendBlockState::kReady);
    done.blocks[b].state = SendBlockState::kReady;
    if (!s.is_ok() && !done.failed()) done.failure = s;
    if (!done.failed()) block_ready(done, b);
    const RankId p = done.peer;
    maybe_finish_out(id);
    if (!peer_failed_[p]) pump_writes(p);
  });
  TW_ASSERT_MSG(submitted.is_ok(), "a copy between live buffers is accepted");
  return true;
}

void Mv2Rendezvous::block_ready(OutTransfer& t, uint32_t b) {
  peer(t.peer).queued_writes.emplace_back(t.id, b);
}

// Posts the peer's ready blocks in order while its send queue takes them.
void Mv2Rendezvous::pump_writes(RankId p) {
  Peer& pr = peer(p);
  while (!pr.queued_writes.empty()) {
    const auto [id, b] = pr.queued_writes.front();
    auto it = out_.find(id);
    if (it == out_.end() || it->second->failed()) {
      pr.queued_writes.pop_front();
      continue;
    }
    OutTransfer& t = *it->second;
    OutTransfer::Block& block = t.blocks[b];
    const Buffer source = block.source.vbuf     ? pr.send_vbufs.vbuf(*block.source.vbuf)
                          : block.source.cached ? pr.send_staging.buffer(*block.source.cached)
                                                : t.send.tensor.buffer;
    const uint64_t offset = block.source.held() ? 0 : b * t.block_bytes;
    const uint32_t lkey = block.source.vbuf     ? pr.send_vbufs.region().lkey
                          : block.source.cached ? pr.send_staging.region(*block.source.cached).lkey
                                                : t.src_region.lkey;
    SendWorkRequest wr;
    wr.wr_id = WorkRequestId{WorkKind::kWrite, p, next_write_}.pack();
    wr.opcode = WorkOpcode::kRdmaWrite;
    wr.local = Sge{source.addr + offset, static_cast<uint32_t>(t.block_len(b)), lkey};
    wr.remote_addr = block.dst;
    wr.rkey = block.rkey;
    const Status s = env_.nic.post_send(env_.nic.queue_pair_to(p), wr);
    if (s.code() == StatusCode::kNoResource) {
      stats_.path(Mv2Path::kWriteWaitsForQueue);
      return;
    }
    pr.queued_writes.pop_front();
    if (!s.is_ok()) {
      fail_out(t, s);
      continue;
    }
    writes_.emplace(next_write_++, WriteRef{id, b});
    ++t.writes_in_flight;
    stats_.rdma_writes += 1;
    stats_.bytes_written += wr.local.length;
    stats_.send_block_moved(SendBlockState::kReady, SendBlockState::kWriting);
    block.state = SendBlockState::kWriting;
    audit({AuditKind::kWritePosted, p, id, b, wr.local.addr, wr.local.length, wr.remote_addr});
    if (options_.planted_bug == PlantedBug::kVbufReuseAtWritePost) free_source(t, b);
    if (options_.planted_bug == PlantedBug::kFinBeforeWriteCompletion) send_fin(t, b);
  }
}

void Mv2Rendezvous::on_write_completion(const Completion& c, uint32_t serial) {
  auto w = writes_.find(serial);
  TW_ASSERT_MSG(w != writes_.end(), "a write completes once");
  const WriteRef ref = w->second;
  writes_.erase(w);
  OutTransfer& t = *out_.at(ref.transfer);
  --t.writes_in_flight;
  const bool ok = c.status == CompletionStatus::kSuccess;
  audit({AuditKind::kWriteCompleted, t.peer, t.id, ref.block, 0, 0, 0, !ok});
  stats_.send_block_moved(SendBlockState::kWriting, SendBlockState::kFinished);
  t.blocks[ref.block].state = SendBlockState::kFinished;
  free_source(t, ref.block);
  if (ok && !t.failed()) {
    send_fin(t, ref.block);
    ++t.finished;
  } else if (!ok) {
    channel(t.peer).fail(Status(StatusCode::kQpError, "rdma write to rank " +
                                                          std::to_string(t.peer) + ": " +
                                                          completion_status_name(c.status)));
  }
  const RankId p = t.peer;
  maybe_finish_out(ref.transfer);
  check_channel(p);
  if (!peer_failed_[p]) advance_peer(p);
}

void Mv2Rendezvous::send_fin(OutTransfer& t, uint32_t b) {
  if (t.blocks[b].fin_sent) return;
  t.blocks[b].fin_sent = true;
  Message m;
  m.type = MessageType::kFin;
  m.transfer = t.id;
  m.block = b;
  audit({AuditKind::kFinSent, t.peer, t.id, b});
  channel(t.peer).send(std::move(m));
}

// The block's vbuf (or staging entry) goes back to its pool.
void Mv2Rendezvous::free_source(OutTransfer& t, uint32_t b) {
  StagingSlot& src = t.blocks[b].source;
  Peer& p = peer(t.peer);
  if (src.vbuf) p.send_vbufs.give_back(*src.vbuf);
  if (src.cached) p.send_staging.give_back(*src.cached);
  src = StagingSlot{};
}

void Mv2Rendezvous::fail_out(OutTransfer& t, const Status& why) {
  if (!t.failed()) t.failure = why;
  maybe_finish_out(t.id);
}

// Ends a transfer once nothing of it is in flight and it is done or failed.
void Mv2Rendezvous::maybe_finish_out(uint32_t id) {
  auto it = out_.find(id);
  if (it == out_.end()) return;
  OutTransfer& t = *it->second;
  if (t.copies_in_flight > 0 || t.writes_in_flight > 0) return;
  if (!t.failed() && (t.blocks.empty() || t.finished < t.blocks.size())) return;
  for (uint32_t b = 0; b < t.blocks.size(); ++b) free_source(t, b);
  if (t.src_region.length > 0) (void)env_.nic.deregister_memory(t.src_region);
  audit({AuditKind::kSendReleased, t.peer, t.id, static_cast<uint32_t>(t.blocks.size()), 0, 0, 0,
         t.failed()});
  const SendState from = t.block_bytes == 0 ? SendState::kRtsSent : SendState::kStreaming;
  stats_.send_moved(from, t.failed() ? SendState::kFailed : SendState::kReleased);
  // The receiver must not wait for FINs that will not come.
  if (t.failed() && !channel(t.peer).failed()) send_error(t.peer, t.key, t.failure, t.id, true);
  std::unique_ptr<OutTransfer> done = std::move(it->second);
  out_.erase(it);
  if (done->send.done) done->send.done(done->failure);
}

}  // namespace tensorwire::mvapich2
