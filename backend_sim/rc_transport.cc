#include "backend_sim/rc_transport.h"

#include "core/assert.h"
#include "core/state_digest.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace tensorwire::sim {
namespace {

CompletionOpcode sender_opcode(WorkOpcode op) {
  switch (op) {
    case WorkOpcode::kSend: return CompletionOpcode::kSend;
    case WorkOpcode::kRdmaRead: return CompletionOpcode::kRdmaRead;
    default: return CompletionOpcode::kRdmaWrite;
  }
}

bool valid_opcode(WorkOpcode op) {
  return static_cast<uint8_t>(op) <= static_cast<uint8_t>(WorkOpcode::kRdmaRead);
}

// Whether the receive at the head of the receiver's queue takes a send of
// `length` bytes: large enough, and registered for local writes.
Status check_receive(SimContext& context, const MemoryRegistry& registry, uint32_t receiver,
                     const RecvWorkRequest& recv, uint32_t length) {
  if (length > recv.local.length) {
    return Status(StatusCode::kInvalidArgument,
                  "send of " + std::to_string(length) + " bytes into a receive of " +
                      std::to_string(recv.local.length));
  }
  context.events.use(SharedObject::memory(receiver, recv.local.addr, length));
  return registry.check_local(recv.local.lkey, recv.local.addr, length, Access::kLocalWrite);
}

// Whether the receiver's registrations let `wr` write where it points.
Status check_remote_write(SimContext& context, const MemoryRegistry& registry, uint32_t receiver,
                          const SendWorkRequest& wr) {
  context.events.use(SharedObject::memory(receiver, wr.remote_addr, wr.local.length));
  return registry.check_remote(wr.rkey, wr.remote_addr, wr.local.length, Access::kRemoteWrite);
}

// The receiver's error completion for a receive a send did not fit.
Completion failed_receive(const RecvWorkRequest& recv, uint32_t length) {
  Completion c;
  c.wr_id = recv.wr_id;
  c.opcode = CompletionOpcode::kRecv;
  c.status = length > recv.local.length ? CompletionStatus::kLocalLengthError
                                        : CompletionStatus::kLocalProtectionError;
  return c;
}

// The receiver's completion of the receive a send or a write-with-imm consumed.
Completion consumed_receive(const SendWorkRequest& wr, uint64_t recv_wr_id) {
  Completion c;
  c.wr_id = recv_wr_id;
  c.opcode = wr.opcode == WorkOpcode::kSend ? CompletionOpcode::kRecv
                                            : CompletionOpcode::kRecvRdmaWithImm;
  c.byte_len = wr.local.length;
  c.has_imm = wr.opcode == WorkOpcode::kRdmaWriteWithImm;
  c.imm_data = c.has_imm ? wr.imm_data : 0;
  return c;
}

// Copies the payload (empty in timing-only mode) to the receiver's memory and
// tells the observer where an RDMA write landed.
void place_payload(SimContext& context, SimMemorySpace& memory, uint32_t receiver,
                   uint64_t dst_addr, const SendWorkRequest& wr, const HeldBytes& payload) {
  if (payload.size() > 0) {
    // The destination first: making it writable copies the held bytes aside
    // when it overlaps them (a rank writing to itself), so they stay as read.
    std::span<std::byte> dst = memory.bytes_at(dst_addr, payload.size(), /*for_write=*/true);
    const std::span<const std::byte> src = payload.bytes();
    TW_ASSERT_HOT(src.size() == payload.size());
    if (!dst.empty()) std::memmove(dst.data(), src.data(), src.size());
  }
  if (wr.opcode != WorkOpcode::kSend && wr.local.length > 0 && context.observer != nullptr) {
    context.observer->on_remote_write_landed(receiver, dst_addr, wr.local.length,
                                             wr.opcode == WorkOpcode::kRdmaWriteWithImm,
                                             wr.imm_data);
  }
}

// The DMA sanitizer's view of a work request: what it reads and writes,
// where. A send's receive buffer is the receiver's own (not tracked: see
// dma_sanitizer.h); a write writes the peer's range; a read reads the peer's
// range into the local one.
void begin_dma(SimContext& context, uint32_t rank, uint32_t peer, uint64_t seq,
               const SendWorkRequest& wr) {
  const uint64_t length = wr.local.length;
  const DmaRange local{rank, wr.local.addr, length};
  const DmaRange remote{peer, wr.remote_addr, length};
  DmaOp op{DmaOpKind::kSend, rank, peer, wr.wr_id, context.now()};
  switch (wr.opcode) {
    case WorkOpcode::kSend:
      context.sanitizer.begin(seq, op, local, DmaRange{rank, 0, 0}, context.now());
      return;
    case WorkOpcode::kRdmaRead:
      op.kind = DmaOpKind::kRdmaRead;
      context.sanitizer.begin(seq, op, remote, local, context.now());
      return;
    default:
      op.kind = wr.opcode == WorkOpcode::kRdmaWrite ? DmaOpKind::kRdmaWrite
                                                    : DmaOpKind::kRdmaWriteWithImm;
      context.sanitizer.begin(seq, op, local, remote, context.now());
      return;
  }
}

void count_delivered(TransportStats& s, const SendWorkRequest& wr) {
  s.bytes_on_wire_tx += wr.local.length;
  if (wr.opcode == WorkOpcode::kSend) s.sends += 1;
  if (wr.opcode == WorkOpcode::kRdmaWrite) s.rdma_writes += 1;
  if (wr.opcode == WorkOpcode::kRdmaWriteWithImm) s.rdma_writes_with_imm += 1;
}

}  // namespace

RcTransport::RcTransport(SimContext& context, std::vector<SimMemorySpace*> memories,
                         std::vector<MemoryRegistry*> registries)
    : context_(context), memories_(std::move(memories)), registries_(std::move(registries)),
      ports_(context, context.fabric),
      qps_(context.cluster.nodes), last_pair_(context.cluster.nodes),
      handlers_(context.cluster.nodes) {}

RcTransport::QueuePair& RcTransport::find_or_make_pair(uint32_t rank, uint32_t peer) {
  LastPair& last = last_pair_[rank];
  // References stay valid as other pairs are created (and no pair is ever
  // erased), so the cached pointer does too.
  last = {peer, &qps_[rank].find_or_make(peer)};
  return *last.pair;
}

const RcTransport::QueuePair* RcTransport::find_qp(uint32_t rank, uint32_t peer) const {
  return qps_[rank].find(peer);
}

QpState RcTransport::state(uint32_t rank, uint32_t peer) const {
  context_.events.use(SharedObject::queue_pair(rank, peer));
  // A pair never used is in its initial state: asking does not create it.
  const QueuePair* pair = find_qp(rank, peer);
  return pair == nullptr ? QpState::kReadyToSend : pair->state;
}

void RcTransport::set_handler(uint32_t rank, CompletionHandler handler) {
  handlers_[rank] = std::move(handler);
}

Status RcTransport::post_send(uint32_t rank, uint32_t peer, const SendWorkRequest& wr) {
  // SimNic::peer_of turned the handle into a peer: never the rank itself.
  TW_ASSERT_HOT(rank < qps_.size() && peer < qps_.size() && rank != peer);
  QueuePair& qp = pair_of(rank, peer);
  context_.events.use(SharedObject::queue_pair(rank, peer));
  if (!valid_opcode(wr.opcode)) {
    return {StatusCode::kInvalidArgument, "post_send: unknown opcode"};
  }
  if (qp.state == QpState::kError) {
    return {StatusCode::kQpError, "post_send: queue pair to rank " + std::to_string(peer) +
                                      " is in the error state"};
  }
  if (qp.outstanding.size() >= context_.cluster.send_queue_depth) {
    return {StatusCode::kNoResource, "post_send: send queue full"};
  }
  context_.events.use(SharedObject::send_queue(rank, peer));
  const uint64_t seq = next_seq_++;
  qp.outstanding.emplace(seq, wr);
  qp.send_queue.push_back(seq);
  if (context_.tracing && context_.cause_seq != 0) causes_.emplace(seq, context_.cause_seq);
  context_.ledger.on_posted(seq, context_.transfer_tag, rank, peer, wr, context_.now());
  begin_dma(context_, rank, peer, seq, wr);
  TW_ASSERT_HOT(qp.outstanding.size() <= context_.cluster.send_queue_depth);
  pump(rank, peer);
  return {};
}

Status RcTransport::post_recv(uint32_t rank, uint32_t peer, const RecvWorkRequest& wr) {
  return post_recv_list(rank, peer, std::span<const RecvWorkRequest>(&wr, 1));
}

Status RcTransport::post_recv_list(uint32_t rank, uint32_t peer,
                                   std::span<const RecvWorkRequest> wrs) {
  TW_ASSERT_HOT(rank < qps_.size() && peer < qps_.size() && rank != peer);
  QueuePair& qp = pair_of(rank, peer);
  context_.events.use(SharedObject::queue_pair(rank, peer));
  if (qp.state == QpState::kError) {
    return {StatusCode::kQpError, "post_recv: queue pair to rank " + std::to_string(peer) +
                                      " is in the error state"};
  }
  // Timing-only mode hands a posted receive's bytes to the NIC (payload mode
  // keeps them, as hardware does: the check is here so that a model
  // checker's executions, in payload mode, make no call per receive).
  const bool forget_bytes = !context_.options.payload;
  for (const RecvWorkRequest& wr : wrs) {
    qp.recvs.push_back(wr);
    if (forget_bytes) memories_[rank]->receive_posted(wr.local.addr, wr.local.length);
  }
  // A sender may be waiting (receiver-not-ready) for exactly these receives.
  if (!wrs.empty() && !qp.arrivals.empty() && !qp.rnr_waiting) process_arrivals(rank, peer);
  return {};
}

// Puts the next queued work request on the wire once the QP is free and the
// rank's CPU has finished what it was doing when it posted.
void RcTransport::pump(uint32_t rank, uint32_t peer) {
  QueuePair& qp = pair_of(rank, peer);
  if (qp.wire_busy || qp.send_queue.empty() || qp.state == QpState::kError) return;
  if (context_.events.is_pending(qp.pump_event)) return;
  // The NIC waits for the CPU that posted (see SimContext::charge_cpu).
  context_.events.use(SharedObject::cpu(rank));
  const TimeNs ready = context_.cpu_ready_ns(rank);
  if (ready > context_.now()) {
    qp.pump_event = context_.events.schedule_at(ready, rank, "post", peer, [this, rank, peer] {
      context_.events.nic_work_on_send_queue(rank, peer);
      pump(rank, peer);
    });
    return;
  }
  const uint64_t seq = qp.send_queue.front();
  qp.send_queue.pop_front();
  auto it = qp.outstanding.find(seq);
  // Only a completion or an error erases a request, and an error clears the
  // send queue with it: what is queued is outstanding.
  TW_ASSERT_HOT_MSG(it != qp.outstanding.end(), "a queued work request is outstanding");
  const SendWorkRequest wr = it->second;
  // The NIC reads the request's registration and bytes.
  context_.events.use(SharedObject::memory(rank, wr.local.addr, wr.local.length));

  const Access local_need = wr.opcode == WorkOpcode::kRdmaRead ? Access::kLocalWrite : Access::kNone;
  Status local = registries_[rank]->check_local(wr.local.lkey, wr.local.addr, wr.local.length,
                                                local_need);
  std::span<std::byte> source;
  if (local.is_ok() && wr.local.length > 0) {
    const SimMemorySpace::ReadView view = memories_[rank]->read_view(wr.local.addr, wr.local.length);
    if (!view.live) local = Status(StatusCode::kNotFound, "local memory was freed");
    source = view.bytes;  // empty when the allocation holds no bytes (timing-only mode)
  }
  if (!local.is_ok()) {
    // The error completion is ordered with the rank's other completions.
    context_.events.touch(rank);
    trace_error(rank, peer, work_opcode_name(wr.opcode), local);
    fail_locally(rank, peer, seq);
    return;
  }
  if (context_.observer != nullptr) {
    context_.observer->on_request_started(rank, peer, wr.wr_id,
                                          wr.opcode == WorkOpcode::kRdmaRead
                                              ? std::span<const std::byte>()
                                              : std::span<const std::byte>(source));
  }
  context_.ledger.on_wire_start(seq, context_.now());
  if (wr.opcode == WorkOpcode::kRdmaRead) {
    start_read(rank, peer, seq, wr);
    return;
  }
  Arrival arrival;
  arrival.seq = seq;
  arrival.wr = wr;
  if (!source.empty()) arrival.payload = memories_[rank]->hold_read(wr.local.addr, source);
  std::deque<Arrival>& arrivals = pair_of(peer, rank).arrivals;
  TW_ASSERT_HOT_MSG(arrivals.empty() || arrivals.back().seq < seq, "arrivals queue in posting order");
  arrivals.push_back(std::move(arrival));
  qp.wire_busy = true;
  qp.flow_live = true;
  const TimeNs started = context_.now();
  qp.flow = ports_.start(rank, peer, wr.local.length,
                         [this, rank, peer, seq, started] { on_drained(rank, peer, seq, started); });
}

void RcTransport::fail_locally(uint32_t rank, uint32_t peer, uint64_t seq) {
  QueuePair& qp = pair_of(rank, peer);
  TW_ASSERT_HOT(!qp.wire_busy && qp.failed_seq == 0 && qp.outstanding.count(seq) == 1);
  // Nothing behind it goes on the wire: the QP is about to enter the error state.
  qp.wire_busy = true;
  if (qp.outstanding.front().first == seq) {
    complete_send(rank, peer, seq, context_.now(), CompletionStatus::kLocalProtectionError, 0);
    return;
  }
  // Requests ahead of it are on their way; the last of their completions
  // delivers this one's (complete_send), keeping the QP's posting order.
  qp.failed_seq = seq;
}

void RcTransport::on_drained(uint32_t rank, uint32_t peer, uint64_t seq, TimeNs started_ns) {
  context_.events.nic_work_on_send_queue(rank, peer);
  QueuePair& qp = pair_of(rank, peer);
  // An error cancels the flow, so a flow that drains is this QP's live one.
  TW_ASSERT_HOT_MSG(qp.wire_busy && qp.flow_live, "a drained flow was on the wire");
  qp.wire_busy = false;
  qp.flow_live = false;
  const TimeNs latency = context_.fabric.latency_ns(rank, peer);
  if (context_.tracing) {
    auto it = qp.outstanding.find(seq);
    if (it != qp.outstanding.end()) {
      const std::string detail = "rank " + std::to_string(rank) + " -> rank " +
                                 std::to_string(peer) + ", " +
                                 std::to_string(it->second.local.length) + " bytes";
      const TimeNs duration = context_.now() - started_ns;
      // An arrow from the message whose handling posted this one (a
      // request to the write it caused), and from this one to what it causes.
      const auto cause = causes_.find(seq);
      const uint64_t flow_in = cause == causes_.end() ? 0 : cause->second;
      if (cause != causes_.end()) causes_.erase(cause);
      context_.trace.causal_slice(
          "node" + std::to_string(rank) + "/nic tx to node" + std::to_string(peer),
          work_opcode_name(it->second.opcode), started_ns, duration, detail, flow_in, seq);
      context_.trace.slice("node" + std::to_string(peer) + "/nic rx from node" + std::to_string(rank),
                           work_opcode_name(it->second.opcode), started_ns + latency, duration, detail);
    }
  }
  const uint64_t what = context_.events.what(rank, peer, seq);
  // The cluster's message-latency noise (0 without jitter) delays the bytes
  // landing; the queue pair still delivers in order (process_arrivals).
  context_.events.schedule_after(latency + context_.jitter.message_ns(), peer, "arrival", what,
                                 [this, rank, peer, seq] {
    QueuePair& in = pair_of(peer, rank);  // process_arrivals reports using it
    for (Arrival& a : in.arrivals) {
      if (a.seq == seq) {
        a.arrived = true;
        break;
      }
    }
    process_arrivals(peer, rank);
  });
  pump(rank, peer);
}

void RcTransport::start_read(uint32_t rank, uint32_t peer, uint64_t seq, const SendWorkRequest& wr) {
  QueuePair& qp = pair_of(rank, peer);
  qp.wire_busy = true;
  const TimeNs latency = context_.fabric.latency_ns(rank, peer);
  // The read request crosses the wire; the responder checks the rkey and sends the data back.
  context_.events.schedule_after(latency, peer, "arrival", context_.events.what(rank, peer, seq),
                                 [this, rank, peer, seq, wr, latency] {
    context_.events.use(SharedObject::queue_pair(rank, peer));
    context_.events.use(SharedObject::queue_pair(peer, rank));
    if (pair_of(rank, peer).outstanding.count(seq) == 0) return;  // flushed meanwhile
    if (state_of(peer, rank) == QpState::kError || context_.crashed[peer]) {
      complete_send(rank, peer, seq, context_.now() + latency, CompletionStatus::kRetryExceeded, 0);
      return;
    }
    context_.events.use(SharedObject::memory(peer, wr.remote_addr, wr.local.length));
    Status remote = registries_[peer]->check_remote(wr.rkey, wr.remote_addr, wr.local.length,
                                                    Access::kRemoteRead);
    std::span<std::byte> source;
    if (remote.is_ok() && wr.local.length > 0) {
      const SimMemorySpace::ReadView view = memories_[peer]->read_view(wr.remote_addr, wr.local.length);
      if (!view.live) remote = Status(StatusCode::kNotFound, "remote memory was freed");
      source = view.bytes;
    }
    if (!remote.is_ok()) {
      trace_error(peer, rank, "rdma read (responder)", remote);
      enter_error(peer, rank, CompletionStatus::kWorkRequestFlushed);
      complete_send(rank, peer, seq, context_.now() + latency,
                    CompletionStatus::kRemoteAccessError, 0);
      return;
    }
    std::vector<std::byte> data(source.begin(), source.end());
    QueuePair& qp_back = pair_of(rank, peer);
    qp_back.flow_live = true;
    const TimeNs started = context_.now();
    qp_back.flow = ports_.start(
        peer, rank, wr.local.length,
        [this, rank, peer, seq, wr, latency, started, data = std::move(data)]() mutable {
          // The response's flow belongs to the requester's queue pair.
          context_.events.use(SharedObject::send_queue(rank, peer));
          pair_of(rank, peer).flow_live = false;
          context_.stats[peer].bytes_on_wire_tx += wr.local.length;
          if (context_.tracing) {
            context_.trace.slice("node" + std::to_string(peer) + "/nic tx to node" +
                                     std::to_string(rank),
                                 "rdma read response", started, context_.now() - started,
                                 std::to_string(wr.local.length) + " bytes");
          }
          context_.events.schedule_after(
              latency + context_.jitter.message_ns(), rank, "arrival",
              context_.events.what(rank, peer, seq),
              [this, rank, peer, seq, wr, data = std::move(data)] {
                context_.events.use(SharedObject::queue_pair(rank, peer));
                context_.events.use(SharedObject::send_queue(rank, peer));
                QueuePair& q = pair_of(rank, peer);
                if (q.outstanding.count(seq) == 0) return;
                q.wire_busy = false;
                if (!data.empty()) {
                  std::span<std::byte> dst =
                      memories_[rank]->bytes_at(wr.local.addr, data.size(), /*for_write=*/true);
                  if (!dst.empty()) std::memcpy(dst.data(), data.data(), data.size());
                }
                context_.stats[rank].rdma_reads += 1;
                context_.ledger.on_landed(seq, context_.now());
                complete_send(rank, peer, seq, context_.now(), CompletionStatus::kSuccess,
                              wr.local.length, /*cause_seq=*/seq);
                pump(rank, peer);
              });
        });
  });
}

void RcTransport::process_arrivals(uint32_t receiver, uint32_t sender) {
  QueuePair& in = pair_of(receiver, sender);
  context_.events.use(SharedObject::queue_pair(receiver, sender));
  const TimeNs latency = context_.fabric.latency_ns(sender, receiver);
  while (!in.rnr_waiting && !in.arrivals.empty() && in.arrivals.front().arrived) {
    Arrival a = std::move(in.arrivals.front());
    in.arrivals.pop_front();
    const SendWorkRequest& wr = a.wr;
    const uint32_t length = wr.local.length;
    if (in.state == QpState::kError || context_.crashed[receiver]) {
      // Nobody answers: the sender's transport retries run out.
      complete_send(sender, receiver, a.seq, context_.now() + latency,
                    CompletionStatus::kRetryExceeded, 0);
      continue;
    }
    const bool needs_recv =
        wr.opcode == WorkOpcode::kSend || wr.opcode == WorkOpcode::kRdmaWriteWithImm;
    if (needs_recv && in.recvs.empty()) {
      a.rnr_tries += 1;
      context_.stats[sender].rnr_retries += 1;
      const uint32_t limit = context_.cluster.rnr_retry_count;
      if (limit != 7 && a.rnr_tries > limit) {
        trace_error(sender, receiver, work_opcode_name(wr.opcode),
                    Status(StatusCode::kNoResource, "receiver not ready, retries exhausted"));
        complete_send(sender, receiver, a.seq, context_.now() + latency,
                      CompletionStatus::kRnrRetryExceeded, 0);
        continue;
      }
      in.arrivals.push_front(std::move(a));
      in.rnr_waiting = true;
      context_.events.schedule_after(context_.cluster.rnr_delay_ns, sender, "rnr retry", receiver,
                                     [this, receiver, sender] {
                                       // Runs as the sender's, acts on the receiver.
                                       context_.events.touch(receiver);
                                       pair_of(receiver, sender).rnr_waiting = false;
                                       process_arrivals(receiver, sender);
                                     });
      return;
    }
    // Where the bytes go, and whether the receiver allows it.
    const bool send = wr.opcode == WorkOpcode::kSend;
    const RecvWorkRequest recv = send ? in.recvs.front() : RecvWorkRequest{};
    const uint64_t dst_addr = send ? recv.local.addr : wr.remote_addr;
    const Status check =
        send ? check_receive(context_, *registries_[receiver], receiver, recv, length)
             : check_remote_write(context_, *registries_[receiver], receiver, wr);
    if (!check.is_ok()) {
      if (send) {
        in.recvs.pop_front();
        trace_error(receiver, sender, "receive", check);
        deliver(receiver, sender, context_.now(), failed_receive(recv, length));
      } else {
        trace_error(receiver, sender, "rdma write (responder)", check);
      }
      enter_error(receiver, sender, CompletionStatus::kWorkRequestFlushed);
      complete_send(sender, receiver, a.seq, context_.now() + latency,
                    CompletionStatus::kRemoteAccessError, 0);
      continue;
    }
    place_payload(context_, *memories_[receiver], receiver, dst_addr, wr, a.payload);
    context_.ledger.on_landed(a.seq, context_.now());
    count_delivered(context_.stats[sender], wr);
    if (needs_recv) {
      const Completion c = consumed_receive(wr, in.recvs.front().wr_id);
      in.recvs.pop_front();
      deliver(receiver, sender, context_.now(), c, /*cause_seq=*/a.seq);
    }
    complete_send(sender, receiver, a.seq, context_.now() + latency, CompletionStatus::kSuccess,
                  length);
  }
}

void RcTransport::complete_send(uint32_t rank, uint32_t peer, uint64_t seq, TimeNs at,
                                CompletionStatus status, uint32_t byte_len, uint64_t cause_seq) {
  QueuePair& qp = pair_of(rank, peer);
  TW_ASSERT_HOT_MSG(at >= context_.now(), "a completion is never in the past");
  // Every completion is decided where a write or send lands, or where it is
  // known never to (the receiver gone or in error, RNR retries exhausted, a
  // failed check, a request the NIC could not read): its target is free now.
  context_.sanitizer.end_write(seq, peer);
  // Only the completion's time stamp is kept here (not reported as a use of
  // the queue pair: every caller already uses one end or the other).
  if (qp.last_completion_ns >= at) at = qp.last_completion_ns + 1;
  qp.last_completion_ns = at;
  const uint64_t what = context_.events.what(peer, static_cast<uint64_t>(status), byte_len, seq);
  context_.events.schedule_at(at, rank, "completion", what,
                              [this, rank, peer, seq, status, byte_len, cause_seq] {
    QueuePair& q = pair_of(rank, peer);
    context_.events.use(SharedObject::queue_pair(rank, peer));
    auto it = q.outstanding.find(seq);
    if (it == q.outstanding.end()) return;  // flushed when the QP broke
    TW_ASSERT_HOT_MSG(seq > q.last_completed_seq,
                  "a queue pair's work requests complete in posting order");
    if constexpr (TENSORWIRE_HOT_ASSERTS) q.last_completed_seq = seq;  // read by assertions only
    Completion c;
    c.wr_id = it->second.wr_id;
    c.qp = QpHandle{peer + 1};
    c.peer = peer;
    c.opcode = sender_opcode(it->second.opcode);
    c.status = status;
    c.byte_len = byte_len;
    // Before the handler may free its buffers. A write's or send's target
    // ended when it landed or was lost (process_arrivals): only a read still
    // has a range at the peer.
    context_.sanitizer.end(seq, rank, it->second.opcode == WorkOpcode::kRdmaRead ? peer : rank);
    q.outstanding.erase(it);
    hand_over(rank, c, cause_seq, /*tag_seq=*/seq);
    // The failing request completes first, then the QP flushes the rest.
    if (status != CompletionStatus::kSuccess) {
      enter_error(rank, peer, CompletionStatus::kWorkRequestFlushed);
    } else if (q.failed_seq != 0 && q.outstanding.front().first == q.failed_seq) {
      // The requests ahead of a locally failed one have all completed.
      const uint64_t failed = std::exchange(q.failed_seq, 0);
      complete_send(rank, peer, failed, context_.now(), CompletionStatus::kLocalProtectionError, 0);
    }
  });
}

void RcTransport::deliver(uint32_t rank, uint32_t peer, TimeNs at, Completion completion,
                          uint64_t cause_seq) {
  QueuePair& qp = pair_of(rank, peer);
  TW_ASSERT_HOT_MSG(at >= context_.now(), "a completion is never in the past");
  completion.qp = QpHandle{peer + 1};
  completion.peer = peer;
  // Completions of one QP never share a time stamp, so a scheduler that
  // reorders same-time events cannot reorder a QP's completions.
  if (qp.last_completion_ns >= at) at = qp.last_completion_ns + 1;
  qp.last_completion_ns = at;
  const uint64_t what = context_.events.what(completion.wr_id, peer, static_cast<uint64_t>(completion.opcode),
                                   static_cast<uint64_t>(completion.status), completion.byte_len,
                                   completion.imm_data);
  context_.events.schedule_at(at, rank, "completion", what, [this, rank, completion, cause_seq] {
    hand_over(rank, completion, cause_seq, /*tag_seq=*/cause_seq);
  });
}

void RcTransport::deliver_flush(uint32_t rank, uint32_t peer, std::vector<Completion> batch) {
  if (batch.empty()) return;
  QueuePair& qp = pair_of(rank, peer);
  TimeNs at_ns = context_.now();
  // After every completion of this QP already scheduled, as deliver() orders them.
  if (qp.last_completion_ns >= at_ns) at_ns = qp.last_completion_ns + 1;
  qp.last_completion_ns = at_ns;
  StateDigest what;
  const bool wants_what = context_.events.wants_what();
  if (wants_what) {
    // The whole batch, so that pending_digest tells two flushes apart.
    what.add(peer).add(batch.size());
    for (const Completion& c : batch) {
      what.add(c.wr_id).add(static_cast<uint64_t>(c.opcode)).add(static_cast<uint64_t>(c.status));
      what.add(c.byte_len).add(c.imm_data);
    }
  }
  for (Completion& c : batch) {
    c.qp = QpHandle{peer + 1};
    c.peer = peer;
  }
  const uint64_t what_value = wants_what ? what.value() : 0;
  context_.events.schedule_at(at_ns, rank, "completion", what_value,
                              [this, rank, batch = std::move(batch)] {
    // One poll of the CQ returns them all: the handler takes them in turn,
    // and what it posts meanwhile meets a QP already in error.
    for (const Completion& c : batch) hand_over(rank, c);
  });
}

void RcTransport::hand_over(uint32_t rank, const Completion& completion, uint64_t cause_seq,
                            uint64_t tag_seq) {
  const uint64_t tag = context_.ledger.take_handler(tag_seq, context_.now());
  if (context_.crashed[rank]) return;
  if (completion.status != CompletionStatus::kSuccess) context_.stats[rank].completions_error += 1;
  if (context_.observer != nullptr) context_.observer->on_completion(rank, completion);
  // What the handler posts was caused by the message it handles.
  const uint64_t outer = std::exchange(context_.cause_seq, cause_seq);
  const uint64_t outer_tag = std::exchange(context_.transfer_tag, tag);
  if (handlers_[rank]) handlers_[rank](completion);
  context_.cause_seq = outer;
  context_.transfer_tag = outer_tag;
}

void RcTransport::enter_error(uint32_t rank, uint32_t peer, CompletionStatus first_status) {
  QueuePair& qp = pair_of(rank, peer);
  context_.events.use(SharedObject::queue_pair(rank, peer));
  if (qp.state == QpState::kError) return;
  // Both ends' queue pairs change here, whichever rank's event is running;
  // the ranks themselves learn of it only through the completions delivered
  // below (or a failing post).
  context_.events.use(SharedObject::queue_pair(peer, rank));
  context_.events.use(SharedObject::send_queue(rank, peer));
  context_.events.use(SharedObject::send_queue(peer, rank));
  qp.state = QpState::kError;
  if (qp.flow_live) {
    ports_.cancel(qp.flow);
    qp.flow_live = false;
  }
  context_.events.cancel(qp.pump_event);
  qp.wire_busy = false;
  qp.failed_seq = 0;  // flushed with the rest
  qp.send_queue.clear();
  // What this QP sent that the peer has not processed is lost with it.
  pair_of(peer, rank).arrivals.clear();
  // The HCA stops every DMA of this end now: its requests are flushed, and
  // what the peer sent here never lands.
  for (const auto& [seq, wr] : qp.outstanding) context_.sanitizer.end(seq, rank, peer);
  for (const Arrival& a : qp.arrivals) context_.sanitizer.end_write(a.seq, rank);
  // The flushes come after every completion already delivered, in seq order.
  if (!qp.outstanding.empty()) {
    TW_ASSERT_HOT_MSG(qp.outstanding.front().first > qp.last_completed_seq,
                  "a queue pair's work requests complete in posting order");
    qp.last_completed_seq = qp.outstanding.back().first;
  }
  std::vector<Completion> flushed;
  flushed.reserve(qp.outstanding.size() + qp.recvs.size());
  for (auto& [seq, wr] : qp.outstanding) {
    Completion c;
    c.wr_id = wr.wr_id;
    c.opcode = sender_opcode(wr.opcode);
    c.status = flushed.empty() ? first_status : CompletionStatus::kWorkRequestFlushed;
    flushed.push_back(c);
    context_.ledger.on_flushed(seq);
  }
  qp.outstanding.clear();
  for (const RecvWorkRequest& r : qp.recvs) {
    Completion c;
    c.wr_id = r.wr_id;
    c.opcode = CompletionOpcode::kRecv;
    c.status = CompletionStatus::kWorkRequestFlushed;
    flushed.push_back(c);
  }
  qp.recvs.clear();
  deliver_flush(rank, peer, std::move(flushed));
  qp.arrivals.clear();
  if (context_.tracing) {
    context_.trace.instant("rank " + std::to_string(rank), "queue pair error", context_.now(),
                           "to rank " + std::to_string(peer));
  }
}

void RcTransport::trace_error(uint32_t rank, uint32_t peer, const char* what, const Status& why) {
  if (!context_.tracing) return;
  context_.trace.instant("rank " + std::to_string(rank), std::string(what) + " failed",
                         context_.now(), "peer rank " + std::to_string(peer) + ": " + why.to_string());
}

void RcTransport::break_pair(uint32_t a, uint32_t b) {
  enter_error(a, b, CompletionStatus::kWorkRequestFlushed);
  enter_error(b, a, CompletionStatus::kWorkRequestFlushed);
}

void RcTransport::crash(uint32_t rank) {
  TW_ASSERT_HOT(rank < qps_.size());
  context_.crashed[rank] = true;
  for (uint32_t p = 0; p < qps_.size(); ++p) {
    if (p == rank) continue;
    enter_error(rank, p, CompletionStatus::kWorkRequestFlushed);
    enter_error(p, rank, CompletionStatus::kRetryExceeded);
  }
}

void RcTransport::digest(StateDigest& d) const {
  auto add_request = [&d](const SendWorkRequest& wr) {
    d.add(wr.wr_id).add(static_cast<uint64_t>(wr.opcode)).add(wr.local.addr).add(wr.local.length);
    d.add(wr.local.lkey).add(wr.remote_addr).add(wr.rkey).add(wr.imm_data);
  };
  // Every pair, used or not, as when all N x N existed: a model checker's
  // states must not differ by which pairs a query happened to create.
  const QueuePair unused;
  for (uint32_t rank = 0; rank < qps_.size(); ++rank) {
    for (uint32_t peer = 0; peer < qps_.size(); ++peer) {
      const QueuePair* found = rank == peer ? nullptr : find_qp(rank, peer);
      const QueuePair& qp = found == nullptr ? unused : *found;
      d.add(static_cast<uint64_t>(qp.state)).add(qp.wire_busy ? 1 : 0).add(qp.rnr_waiting ? 1 : 0);
      d.add(qp.failed_seq);
      d.add(qp.outstanding.size());
      for (const auto& [seq, wr] : qp.outstanding) {
        d.add(seq);
        add_request(wr);
      }
      d.add(qp.send_queue.size());
      for (uint64_t seq : qp.send_queue) d.add(seq);
      d.add(qp.recvs.size());
      for (const RecvWorkRequest& r : qp.recvs) d.add(r.wr_id).add(r.local.addr).add(r.local.length).add(r.local.lkey);
      d.add(qp.arrivals.size());
      for (const Arrival& a : qp.arrivals) {
        d.add(a.seq).add(a.arrived ? 1 : 0).add(a.rnr_tries);
        add_request(a.wr);
        const std::span<const std::byte> payload = a.payload.bytes();
        d.add(std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()));
      }
    }
  }
}

}  // namespace tensorwire::sim
