// The receiver's side of a rendezvous: on RTS, the destination (the user's
// buffer when the NIC reaches it, else vbufs or, naive, one whole-buffer
// host staging entry) and a CTS naming it; on each block's FIN, a copy to the
// GPU out of its vbuf, after which the vbuf is offered again in a later CTS.
// The Recv's callback runs once every block is in the user's buffer.
#include <utility>

#include "core/assert.h"
#include "core/protocols/mvapich2_gpu/rndv_transfer.h"

namespace tensorwire::mvapich2 {

void Mv2Rendezvous::on_rts(const Arrival& a) {
  const Message& m = a.message;
  const InKey key{a.peer, m.transfer};
  if (in_.count(key) != 0) {
    stats_.protocol_errors += 1;
    return channel(a.peer).fail(Status(StatusCode::kMalformedMessage,
                                       "mvapich2_gpu: a second RTS for transfer " +
                                           std::to_string(m.transfer)));
  }
  auto r = recvs_.find(RecvKey{a.peer, m.name, m.step_id});
  if (r == recvs_.end()) {
    // Its Recv was aborted meanwhile: the sender must not wait for a CTS.
    stats_.path(Mv2Path::kRtsRefused);
    const Status why(StatusCode::kAborted, "mvapich2_gpu: no Recv waits for " + m.name);
    return send_error(a.peer, Key{m.name, m.step_id}, why, m.transfer);
  }
  auto t = std::make_unique<InTransfer>();
  t->src = a.peer;
  t->transfer = m.transfer;
  t->key = Key{m.name, m.step_id};
  t->recv = std::move(r->second);
  recvs_.erase(r);
  if (Status s = prepare_in(*t, m); !s.is_ok()) {
    send_error(a.peer, t->key, s, m.transfer);
    return deliver(std::move(t->recv), s, {}, RecvState::kRequested);
  }
  stats_.path(Mv2Path::kRendezvous);
  if (t->blocks.size() > 1) stats_.path(Mv2Path::kSeveralBlocks);
  stats_.recv_moved(RecvState::kRequested, RecvState::kRendezvous);
  InTransfer& ref = *t;
  in_.emplace(key, std::move(t));
  offer(ref);
}

// Allocates the user's buffer and chooses where blocks land and how big
// they are: one block when both ends are NIC-reachable (nothing to overlap)
// or staging is naive, else the pipeline's block_bytes.
Status Mv2Rendezvous::prepare_in(InTransfer& t, const Message& m) {
  t.bytes = m.tensor_bytes;
  Result<Buffer> dst = allocate(t.recv.args.dst_kind, t.recv.args.dst_device, t.bytes);
  if (!dst) return dst.status();
  t.result = tensor_of(m, *dst);
  t.direct = is_nic_reachable(dst->kind);
  const bool pipelined = options_.staging == Staging::kPipelined && (m.flag || !t.direct);
  // One RDMA write moves at most kMaxBlockBytes (a work request's length is 32 bits).
  t.block_bytes = std::min(t.bytes, pipelined ? options_.block_bytes : kMaxBlockBytes);
  if (!t.direct && !pipelined && t.block_bytes < t.bytes) {
    free_buffer(*dst);
    return Status(StatusCode::kResourceLimit,
                  "mvapich2_gpu: naive staging carries at most " + std::to_string(kMaxBlockBytes) +
                      " bytes in its one block; " + m.name + " has " + std::to_string(t.bytes));
  }
  t.blocks.resize((t.bytes + t.block_bytes - 1) / t.block_bytes);
  if (t.direct) {
    Result<MemoryRegion> r =
        env_.nic.register_memory(*dst, Access::kLocalWrite | Access::kRemoteWrite);
    if (!r) {
      free_buffer(*dst);
      return r.status();
    }
    stats_.registrations += 1;
    t.dst_region = *r;
    stats_.path(Mv2Path::kDirectDestination);
    return {};
  }
  stats_.path(Mv2Path::kStagedDestination);
  t.vbufs = pipelined;
  if (!pipelined) return {};
  if (Status s = peer(t.src).recv_vbufs.ensure(); !s.is_ok()) {
    free_buffer(*dst);
    return s;
  }
  return {};
}

// Sends a CTS for the blocks that can be given a destination now.
void Mv2Rendezvous::offer(InTransfer& t) {
  if (t.failed() || t.next_offer >= t.blocks.size()) return;
  Peer& p = peer(t.src);
  Message m;
  m.type = MessageType::kCts;
  m.transfer = t.transfer;
  m.block = t.next_offer;
  m.block_bytes = t.block_bytes;
  if (t.direct) {
    m.flag = true;
    m.rkey = t.dst_region.rkey;
    m.addrs = {t.result.buffer.addr};
  } else if (!t.vbufs) {
    Result<uint32_t> id = p.recv_staging.take(t.bytes);
    if (!id) return fail_in(t, id.status());
    stats_.path(Mv2Path::kNaiveStaging);
    t.blocks[0].landing.cached = *id;
    m.rkey = p.recv_staging.region(*id).rkey;
    m.addrs = {p.recv_staging.buffer(*id).addr};
  } else {
    if (t.next_offer > 0) stats_.path(Mv2Path::kVbufReoffered);
    while (t.next_offer + m.addrs.size() < t.blocks.size() && m.addrs.size() < kMaxCtsAddrs) {
      const std::optional<uint32_t> v = p.recv_vbufs.take();
      if (!v) break;
      t.blocks[t.next_offer + m.addrs.size()].landing.vbuf = *v;
      m.addrs.push_back(p.recv_vbufs.vbuf(*v).addr);
    }
    if (m.addrs.empty()) return;  // a vbuf coming back offers it
    m.rkey = p.recv_vbufs.region().rkey;
  }
  const size_t count = t.direct ? t.blocks.size() : m.addrs.size();
  for (size_t i = 0; i < count; ++i) {
    const uint32_t b = t.next_offer + static_cast<uint32_t>(i);
    t.blocks[b].offered = true;
    const uint64_t at = t.direct ? m.addrs[0] + b * t.block_bytes : m.addrs[i];
    audit({AuditKind::kBlockOffered, t.src, t.transfer, b, at, t.block_len(b)});
  }
  t.next_offer += static_cast<uint32_t>(count);
  channel(t.src).send(std::move(m));
}

// Offers the peer's returned vbufs to its transfers, oldest first.
void Mv2Rendezvous::offer_peer(RankId src) {
  for (auto& [key, t] : in_) {
    if (key.first != src) continue;
    if (t->vbufs && !t->failed() && t->next_offer < t->blocks.size()) offer(*t);
    if (peer(src).recv_vbufs.free_count() == 0) return;
  }
}

void Mv2Rendezvous::on_fin(const Arrival& a) {
  const InKey key{a.peer, a.message.transfer};
  auto it = in_.find(key);
  if (it == in_.end() || it->second->failed()) {
    stats_.unexpected_messages += 1;
    return;
  }
  InTransfer& t = *it->second;
  if (Status s = accept_fin(t, a.message.block); !s.is_ok()) {
    stats_.protocol_errors += 1;
    return channel(a.peer).fail(std::move(s));
  }
  if (t.direct) {
    stats_.recv_block_moved(RecvBlockState::kLanded, RecvBlockState::kDone);
    t.blocks[a.message.block].state = RecvBlockState::kDone;
    return block_done(t, a.message.block);
  }
  copy_out(key, a.message.block);
}

Status Mv2Rendezvous::accept_fin(InTransfer& t, uint32_t b) {
  if (b >= t.blocks.size() || !t.blocks[b].offered ||
      t.blocks[b].state != RecvBlockState::kOffered) {
    return Status(StatusCode::kMalformedMessage,
                  "mvapich2_gpu: FIN for block " + std::to_string(b) + " of transfer " +
                      std::to_string(t.transfer) + ", which is not waiting for one");
  }
  stats_.recv_block_moved(RecvBlockState::kOffered, RecvBlockState::kLanded);
  t.blocks[b].state = RecvBlockState::kLanded;
  return {};
}

// The block's bytes from its vbuf (or staging entry) into the user's buffer.
void Mv2Rendezvous::copy_out(const InKey& key, uint32_t b) {
  InTransfer& t = *in_.at(key);
  Peer& p = peer(t.src);
  const StagingSlot& at = t.blocks[b].landing;
  TW_ASSERT_MSG(at.held(), "a staged block landed in a vbuf or a staging entry");
  const Buffer from = at.vbuf ? p.recv_vbufs.vbuf(*at.vbuf) : p.recv_staging.buffer(*at.cached);
  stats_.recv_block_moved(RecvBlockState::kLanded, RecvBlockState::kCopyingToDevice);
  t.blocks[b].state = RecvBlockState::kCopyingToDevice;
  ++copies_in_flight_;
  ++t.copies_in_flight;
  stats_.copies += 1;
  Status submitted = env_.copy_engine.submit(t.result.buffer, b * t.block_bytes, from, 0,
                                             t.block_len(b), [this, key, b](Status s) {
    --copies_in_flight_;
    InTransfer& done = *in_.at(key);
    --done.copies_in_flight;
    stats_.recv_block_moved(RecvBlockState::kCopyingToDevice, RecvBlockState::kDone);
    done.blocks[b].state = RecvBlockState::kDone;
    if (!s.is_ok() && !done.failed()) done.failure = s;
    block_done(done, b);
  });
  TW_ASSERT_MSG(submitted.is_ok(), "a copy between live buffers is accepted");
}

// The block is in the user's buffer: its vbuf goes back and is offered again.
void Mv2Rendezvous::block_done(InTransfer& t, uint32_t b) {
  ++t.done;
  audit({AuditKind::kBlockCopiedOut, t.src, t.transfer, b});
  StagingSlot& at = t.blocks[b].landing;
  Peer& p = peer(t.src);
  if (at.vbuf) p.recv_vbufs.give_back(*at.vbuf);
  if (at.cached) p.recv_staging.give_back(*at.cached);
  at = StagingSlot{};
  const RankId src = t.src;
  const InKey key{t.src, t.transfer};
  maybe_finish_in(key);
  if (!peer_failed_[src]) offer_peer(src);
}

void Mv2Rendezvous::fail_in(InTransfer& t, const Status& why) {
  if (!t.failed()) t.failure = why;
  maybe_finish_in(InKey{t.src, t.transfer});
}

// Ends a transfer once no copy of it is in flight and every block is in, or
// it failed; the Recv of an aborted step reports the abort.
void Mv2Rendezvous::maybe_finish_in(const InKey& key) {
  auto it = in_.find(key);
  if (it == in_.end()) return;
  InTransfer& t = *it->second;
  if (t.copies_in_flight > 0) return;
  if (!t.failed() && t.done < t.blocks.size()) return;
  Peer& p = peer(t.src);
  for (uint32_t i = 0; i < t.blocks.size(); ++i) {
    InTransfer::Block& b = t.blocks[i];
    // A failed transfer gives up the ranges it offered: the sender ended it
    // with no write in flight, or its queue pair is in error.
    if (b.offered && b.state != RecvBlockState::kDone) {
      audit({AuditKind::kBlockCopiedOut, t.src, t.transfer, i});
    }
    if (b.landing.vbuf) p.recv_vbufs.give_back(*b.landing.vbuf);
    if (b.landing.cached) p.recv_staging.give_back(*b.landing.cached);
    b.landing = StagingSlot{};
  }
  if (t.dst_region.length > 0) (void)env_.nic.deregister_memory(t.dst_region);
  // The sender must not wait for CTS that will not come.
  if (t.failed() && !channel(t.src).failed()) {
    send_error(t.src, t.key, t.failure, t.transfer, false);
  }
  std::unique_ptr<InTransfer> done = std::move(it->second);
  in_.erase(it);
  Status status = done->failure;
  if (auto a = aborted_steps_.find(done->key.second); status.is_ok() && a != aborted_steps_.end()) {
    status = a->second;
  }
  if (!status.is_ok()) {
    free_buffer(done->result.buffer);
    return deliver(std::move(done->recv), status, {}, RecvState::kRendezvous);
  }
  deliver(std::move(done->recv), {}, done->result, RecvState::kRendezvous);
}

}  // namespace tensorwire::mvapich2
