#include "core/protocols/realm_broadcast/transfer_operation.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/assert.h"
#include "core/protocols/realm_broadcast/transfer_operation_state.h"

namespace tensorwire::collectives {
namespace {

// Work request ids: kind (8 bits) | peer rank (24 bits) | index (32 bits).
enum class WrKind : uint64_t { kRecvSlot = 1, kMessageSlot = 2, kChunkWrite = 3 };
constexpr uint32_t kRecvSlotsPerPeer = TransferOperation::kReceivesPerPeer;
constexpr uint32_t kSendSlotsPerPeer = 64;
constexpr uint64_t kSlotBytes = CollectiveMessage::kWireBytes;

static_assert(static_cast<uint64_t>(WrKind::kChunkWrite) <= 0xff, "a kind fits its 8 bits");

uint64_t make_wr_id(WrKind kind, RankId peer, uint32_t index) {
  TW_ASSERT_MSG(peer <= 0xffffff, "a rank fits the 24 bits of a work request id");
  return (static_cast<uint64_t>(kind) << 56) | (static_cast<uint64_t>(peer & 0xffffff) << 32) | index;
}
WrKind wr_kind(uint64_t id) { return static_cast<WrKind>(id >> 56); }
uint32_t wr_index(uint64_t id) { return static_cast<uint32_t>(id & 0xffffffffu); }

}  // namespace

TransferOperation::TransferOperation(RankEnv env, const TransferGraph& graph,
                                     const ClusterTopology& topology, BroadcastOptions options,
                                     CollectiveObserver* observer, PlantedCollectiveBug bug)
    : env_(env), graph_(graph), topology_(topology), options_(options), observer_(observer),
      bug_(bug) {}

TransferOperation::~TransferOperation() = default;

bool TransferOperation::mine(uint32_t buffer) const {
  return graph_.buffers[buffer].memory.node == my_rank();
}

uint64_t TransferOperation::ib_bytes_in_use() const {
  uint64_t total = 0;
  for (const auto& [memory, pool] : pools_) total += pool.ib.bytes_in_use();
  return total;
}

Status TransferOperation::start(const std::map<uint32_t, Buffer>& instances) {
  if (started_) return {StatusCode::kInvalidArgument, "transfer operation already started"};
  started_ = true;
  if (std::string why = graph_.validate(); !why.empty()) {
    return {StatusCode::kInvalidArgument, "malformed transfer graph: " + why};
  }
  const NetworkUse network(graph_);
  mark_windowed(network);
  std::map<MemoryId, std::vector<uint32_t>> ibs_by_memory;
  if (Status st = place_instances(instances, network, ibs_by_memory); !st.is_ok()) return st;
  for (auto& [memory, ids] : ibs_by_memory) {
    if (Status st = place_ib_pool(memory, ids, network); !st.is_ok()) return st;
  }
  if (Status st = connect_peers(plan_copies()); !st.is_ok()) return st;
  env_.nic.set_completion_handler([this](const Completion& c) { on_completion(c); });

  copies_unfinished_ = copies_.size();
  for (uint32_t d : graph_.destinations) {
    if (mine(d)) ++destinations_unfinished_;
  }
  announce_ib_ready();
  const uint64_t total = graph_.bytes;
  if (mine(graph_.source)) {
    buffers_[graph_.source].written = total;
    if (observer_ != nullptr) observer_->on_bytes_landed(graph_.source, total);
    on_written(graph_.source);
  }
  if (total == 0) {
    for (uint32_t d : graph_.destinations) {
      if (mine(d)) on_written(d);
    }
  }
  for (auto& [id, s] : copies_) try_issue(id);
  return status_;
}

Status TransferOperation::register_for_network(uint32_t buffer, const NetworkUse& network) {
  if (!network.in[buffer] && !network.out[buffer]) return {};
  if (windowed_[buffer]) return register_first_window(buffer);
  BufferState& s = buffers_[buffer];
  const Access access =
      network.in[buffer] ? Access::kLocalWrite | Access::kRemoteWrite : Access::kNone;
  Result<MemoryRegion> region = env_.nic.register_memory(s.mem, access);
  if (!region) return region.status();
  regions_.push_back(*region);
  s.lkey = region->lkey;
  s.rkey = region->rkey;
  return {};
}

Status TransferOperation::place_instances(const std::map<uint32_t, Buffer>& instances,
                                          const NetworkUse& network,
                                          std::map<MemoryId, std::vector<uint32_t>>& ibs_by_memory) {
  for (const TransferBuffer& b : graph_.buffers) {
    if (b.memory.node != my_rank()) continue;
    BufferState& s = buffers_[b.id];
    s.consumer_read.assign(b.consumers.size(), 0);
    if (b.role == BufferRole::kIB) {
      ibs_by_memory[b.memory].push_back(b.id);
      continue;
    }
    auto it = instances.find(b.id);
    if (it == instances.end()) {
      return {StatusCode::kInvalidArgument, "no instance given for " + b.name()};
    }
    if (it->second.length < graph_.bytes) {
      return {StatusCode::kInvalidArgument, b.name() + ": instance of " +
                                                std::to_string(it->second.length) +
                                                " bytes is smaller than the broadcast"};
    }
    s.mem = it->second;
    if (Status st = register_for_network(b.id, network); !st.is_ok()) return st;
  }
  return {};
}

Status TransferOperation::place_ib_pool(const MemoryId& memory, const std::vector<uint32_t>& ids,
                                        const NetworkUse& network) {
  Pool& pool = pools_.try_emplace(memory, options_.ib_pool_bytes).first->second;
  uint64_t end = 0;
  for (uint32_t id : ids) {
    const TransferBuffer& b = graph_.buffers[id];
    Result<uint64_t> offset =
        pool.ib.do_alloc(b.ring_bytes, static_cast<uint32_t>(b.consumers.size()));
    if (!offset) return {offset.status().code(), b.name() + ": " + offset.status().message()};
    buffers_[id].pool_offset = *offset;
    coverage_.count(memory.is_host() ? BroadcastPath::kIbBufferInHost : BroadcastPath::kIbBufferInGpu);
    if (ids.size() > 1) coverage_.count(BroadcastPath::kSeveralIbBuffersInMemory);
    if (b.consumers.size() > 1) coverage_.count(BroadcastPath::kIbBufferSeveralConsumers);
    if (b.ring_bytes > 0) end = std::max(end, *offset + b.ring_bytes);
    TW_ASSERT_MSG(end <= pool.ib.pool_bytes(), "an IB buffer lies inside its pool");
    if (observer_ != nullptr) {
      observer_->on_ib_allocated(id, pool.ib.bytes_in_use(), pool.ib.pool_bytes());
    }
  }
  Result<Buffer> backing =
      env_.memory.allocate(topology_.kind_of(memory), topology_.device_of(memory), end);
  if (!backing) {
    return {backing.status().code(), "IB pool of " + memory.name() + ": " + backing.status().message()};
  }
  pool.backing = *backing;
  allocations_.push_back(*backing);
  for (uint32_t id : ids) {
    BufferState& s = buffers_[id];
    const uint64_t ring = graph_.buffers[id].ring_bytes;
    s.mem = Buffer{pool.backing.addr + (ring > 0 ? *s.pool_offset : 0), ring, pool.backing.kind,
                   pool.backing.device};
    // Each ring is its own region with its own rkey: a peer that may write
    // one ring cannot reach its neighbours in the pool.
    if (Status st = register_for_network(id, network); !st.is_ok()) return st;
  }
  peak_ib_bytes_ = std::max(peak_ib_bytes_, ib_bytes_in_use());
  return {};
}

std::vector<RankId> TransferOperation::plan_copies() {
  const RankId me = my_rank();
  std::vector<RankId> peer_ranks;
  for (const TransferCopy& c : graph_.copies) {
    if (c.hop.network && c.rank() == me) peer_ranks.push_back(c.hop.to.node);
    if (c.hop.network && c.hop.to.node == me) peer_ranks.push_back(c.rank());
    if (c.rank() != me) continue;
    if (graph_.buffers[c.from].role == BufferRole::kDestination) {
      coverage_.count(BroadcastPath::kEntryBufferForwards);
    }
    CopyState& s = copies_[c.id];
    s.ready = !c.hop.network;
    const auto& consumers = graph_.buffers[c.from].consumers;
    s.in_consumer_index =
        static_cast<uint32_t>(std::find(consumers.begin(), consumers.end(), c.id) - consumers.begin());
    // start() validated the graph: a copy is listed among its input's consumers.
    TW_ASSERT(s.in_consumer_index < consumers.size());
  }
  std::sort(peer_ranks.begin(), peer_ranks.end());
  peer_ranks.erase(std::unique(peer_ranks.begin(), peer_ranks.end()), peer_ranks.end());
  return peer_ranks;
}

Status TransferOperation::connect_peers(const std::vector<RankId>& peer_ranks) {
  for (RankId peer : peer_ranks) {
    PeerState& p = peers_[peer];
    p.qp = env_.nic.queue_pair_to(peer);
    Result<Buffer> ring = env_.memory.allocate(MemoryKind::kHostPinned, 0, kRecvSlotsPerPeer * kSlotBytes);
    Result<Buffer> slots = env_.memory.allocate(MemoryKind::kHostPinned, 0, kSendSlotsPerPeer * kSlotBytes);
    if (!ring) return ring.status();
    allocations_.push_back(*ring);
    if (!slots) return slots.status();
    allocations_.push_back(*slots);
    p.recv_ring = *ring;
    p.send_slots = *slots;
    Result<MemoryRegion> ring_region = env_.nic.register_memory(p.recv_ring, Access::kLocalWrite);
    if (!ring_region) return ring_region.status();
    regions_.push_back(*ring_region);
    Result<MemoryRegion> slot_region = env_.nic.register_memory(p.send_slots, Access::kNone);
    if (!slot_region) return slot_region.status();
    regions_.push_back(*slot_region);
    p.recv_lkey = ring_region->lkey;
    p.send_lkey = slot_region->lkey;
    for (uint32_t i = kSendSlotsPerPeer; i-- > 0;) p.free_slots.push_back(i);
    for (uint32_t i = 0; i < kRecvSlotsPerPeer; ++i) {
      RecvWorkRequest wr{make_wr_id(WrKind::kRecvSlot, peer, i),
                         Sge{p.recv_ring.addr + i * kSlotBytes, static_cast<uint32_t>(kSlotBytes),
                             p.recv_lkey}};
      if (Status st = env_.nic.post_recv(p.qp, wr); !st.is_ok()) return st;
    }
  }
  return {};
}

void TransferOperation::announce_ib_ready() {
  // Tell each writer into this rank where its bytes go.
  for (const TransferCopy& c : graph_.copies) {
    if (!c.hop.network || c.hop.to.node != my_rank()) continue;
    const BufferState& s = buffers_[c.to];
    CollectiveMessage m;
    m.type = CollectiveMessageType::kIbReady;
    m.copy = c.id;
    m.addr = s.mem.addr;
    m.rkey = s.rkey;
    m.ring_bytes = graph_.buffers[c.to].ring_bytes;
    send_message(c.rank(), m);
    if (windowed_[c.to]) top_up_windows(c.to);
  }
}

bool TransferOperation::finished() const {
  return started_ && status_.is_ok() && copies_unfinished_ == 0 && destinations_unfinished_ == 0;
}

void TransferOperation::fail(Status status) {
  TW_ASSERT_MSG(!status.is_ok(), "a failure is an error");
  CollectiveMessage abort;
  abort.type = CollectiveMessageType::kAbort;
  abort.failed_rank = my_rank();
  abort.reason = status.code();
  end_part(std::move(status), abort, std::nullopt);
}

// The first error ends this rank's part. A part that ends unfinished leaves
// its peers waiting for bytes, signals and room it will never give: each is
// told ABORT (who failed first and why), but the one that told this rank.
// What was still queued for them is dropped: after the ABORT nothing matters.
// A part that had finished owes its peers nothing (its writes acknowledged,
// its destinations full, its readers done), so they are left to finish.
void TransferOperation::end_part(Status status, const CollectiveMessage& abort,
                                 std::optional<RankId> told_by) {
  if (!status_.is_ok()) return;
  const bool part_was_finished = finished();
  coverage_.count(BroadcastPath::kRankFailed);
  status_ = std::move(status);
  env_.trace.instant("rank " + std::to_string(my_rank()) + "/collective", "error",
                     env_.clock.now_ns(), status_.to_string());
  if (part_was_finished) return;
  for (auto& [peer, p] : peers_) {
    p.backlog.clear();
    p.pending.clear();
    // A post that fails here (the queue pair to that peer broke) reaches
    // fail(), which the error above already makes a no-op.
    if (peer != told_by) send_message(peer, abort);
  }
}

void TransferOperation::on_abort(RankId peer, const CollectiveMessage& abort) {
  const std::string failed = std::to_string(abort.failed_rank);
  if (abort.failed_rank >= topology_.cluster().nodes || abort.failed_rank == my_rank()) {
    fail({StatusCode::kMalformedMessage, "ABORT from rank " + std::to_string(peer) + " names rank " +
                                             failed + ", not another rank of this broadcast"});
    return;
  }
  if (finished()) return;  // nothing is left here that the failure could stop
  end_part({StatusCode::kAborted, "rank " + std::to_string(peer) + " passed on that rank " + failed +
                                      " failed (" + status_code_name(abort.reason) +
                                      "): the broadcast cannot complete"},
           abort, peer);
}

uint64_t TransferOperation::downstream_limit(uint32_t copy) const {
  const TransferCopy& c = graph_.copies[copy];
  const TransferBuffer& out = graph_.buffers[c.to];
  // A windowed instance: only what the receiver has registered.
  if (c.hop.network && windowed_[c.to]) return copies_.at(copy).window_end;
  // An instance holds the whole message: its producer never waits for room.
  if (out.role != BufferRole::kIB) return std::numeric_limits<uint64_t>::max();
  if (c.hop.network) return copies_.at(copy).downstream_read + out.ring_bytes;
  const BufferState& s = buffers_.at(c.to);
  uint64_t read = s.consumer_read.empty() ? 0 : s.consumer_read.front();
  for (uint64_t r : s.consumer_read) {
    read = bug_ == PlantedCollectiveBug::kMaxConsumerRead ? std::max(read, r) : std::min(read, r);
  }
  return read + out.ring_bytes;
}

void TransferOperation::try_issue(uint32_t copy) {
  CopyState& s = copies_.at(copy);
  if (s.finished || !status_.is_ok()) return;
  const TransferCopy& c = graph_.copies[copy];
  const uint64_t total = graph_.bytes;
  if (total == 0) {
    finish_copy(copy);
    return;
  }
  if (!s.ready) return;
  BufferState& in = buffers_.at(c.from);
  const uint64_t in_ring = graph_.buffers[c.from].ring_bytes;
  const uint64_t out_ring = graph_.buffers[c.to].ring_bytes;
  // Instances hold all `total` bytes and the planner gives every IB ring of a
  // non-empty broadcast at least one: no ring offset below divides by zero.
  TW_ASSERT_MSG(in_ring > 0 && out_ring > 0, "a non-empty broadcast has non-empty rings");
  while (s.inflight.size() < options_.max_inflight_chunks && s.issued < total) {
    const uint64_t limit = downstream_limit(copy);
    const uint64_t space = limit > s.issued ? limit - s.issued : 0;
    const uint64_t avail = in.written > s.issued ? in.written - s.issued : 0;
    const uint64_t off_in = s.issued % in_ring;
    const uint64_t off_out = s.issued % out_ring;
    const uint64_t to_window_end = room_to_window_end(copy, off_out);
    const uint64_t len = std::min({avail, space, options_.max_chunk_bytes, in_ring - off_in,
                                   out_ring - off_out, to_window_end});
    if (len == 0) {
      if (space == 0 && avail > 0) coverage_.count(BroadcastPath::kWaitedForRoom);
      break;
    }
    // Forward at least min_chunk at a time, except the stream's tail and the
    // piece up to a ring's end (waiting there could wait for ever).
    const bool at_ring_end =
        len == in_ring - off_in || len == out_ring - off_out || len == to_window_end;
    if (len < options_.min_chunk_bytes && len != total - s.issued && !at_ring_end) {
      coverage_.count(BroadcastPath::kHeldForMinChunk);
      break;
    }

    const uint64_t begin = s.issued;
    if (observer_ != nullptr) observer_->on_chunk_issued(copy, begin, begin + len);
    copy_first_busy_ns_.try_emplace(copy, env_.clock.now_ns());
    s.issued += len;
    s.inflight.emplace_back(len, env_.clock.now_ns());
    ++chunks_issued_;
    if (graph_.buffers[c.to].role == BufferRole::kIB && begin >= out_ring) {
      coverage_.count(BroadcastPath::kRingWrapped);
    }
    coverage_.count(c.hop.network ? BroadcastPath::kNetworkChunk : BroadcastPath::kLocalChunk);
    if (c.hop.network) {
      write_chunk(copy, off_in, off_out, len);
      if (!status_.is_ok()) return;  // the post failed: the part is over
    } else {
      const BufferState& out = buffers_.at(c.to);
      Status st = env_.copy_engine.submit(out.mem, off_out, in.mem, off_in, len,
                                          [this, copy](Status done) { on_chunk_complete(copy, done); });
      if (!st.is_ok()) {
        fail(std::move(st));
        return;
      }
    }
  }
  if (s.inflight.size() >= options_.max_inflight_chunks && s.issued < total) {
    coverage_.count(BroadcastPath::kInflightLimit);
  }
}

// Posts a chunk of a network copy: an RDMA write with the copy id as its
// immediate, from the input's ring offset to the target's.
void TransferOperation::write_chunk(uint32_t copy, uint64_t off_in, uint64_t off_out, uint64_t len) {
  const TransferCopy& c = graph_.copies[copy];
  CopyState& s = copies_.at(copy);
  BufferState& in = buffers_.at(c.from);
  SendWorkRequest wr;
  wr.wr_id = make_wr_id(WrKind::kChunkWrite, c.hop.to.node, copy);
  wr.opcode = WorkOpcode::kRdmaWriteWithImm;
  wr.local = Sge{in.mem.addr + off_in, static_cast<uint32_t>(len), in.lkey};
  wr.remote_addr = s.remote_addr + off_out;
  wr.rkey = windowed_[c.to] ? window_rkey(copy, off_out) : s.rkey;
  wr.imm_data = copy;
  post_or_queue(c.hop.to.node, wr);
  if (bug_ == PlantedCollectiveBug::kReadReportedAtIssue && graph_.buffers[c.from].role == BufferRole::kIB) {
    // The ring bytes count as read once the write is posted: the producer
    // may refill them while the NIC still reads them.
    in.consumer_read[s.in_consumer_index] = s.issued;
    on_read_progress(c.from);
  }
}

void TransferOperation::on_chunk_complete(uint32_t copy, Status status) {
  if (!status.is_ok()) {
    fail(std::move(status));
    return;
  }
  CopyState& s = copies_.at(copy);
  // Every chunk this operation issues gets one completion (the copy engine's
  // done or the NIC's completion of its write), so this is reached only by a
  // completion someone else posted on this rank's NIC with an id that looks
  // like a chunk write of ours (see on_completion): outside input, an error.
  if (s.inflight.empty()) {
    fail({StatusCode::kInternal, "copy " + std::to_string(copy) + " completed a chunk it never issued"});
    return;
  }
  const auto [len, issued_at] = s.inflight.front();
  s.inflight.pop_front();
  s.completed += len;
  TW_ASSERT(s.completed <= s.issued && s.completed <= graph_.bytes);
  const TransferCopy& c = graph_.copies[copy];
  const TimeNs now = env_.clock.now_ns();
  env_.trace.slice("collective c" + std::to_string(copy) + " " + c.hop.from.name() + " -> " +
                       c.hop.to.name(),
                   c.hop.network ? "rdma write" : "copy", issued_at, now - issued_at,
                   "bytes [" + std::to_string(s.completed - len) + ", " +
                       std::to_string(s.completed) + ")");
  if (observer_ != nullptr) observer_->on_chunk_done(copy, s.completed);
  BufferState& in = buffers_.at(c.from);
  in.consumer_read[s.in_consumer_index] = s.completed;
  on_read_progress(c.from);
  if (!c.hop.network) {
    BufferState& out = buffers_.at(c.to);
    out.written = s.completed;
    if (observer_ != nullptr) observer_->on_bytes_landed(c.to, out.written);
    on_written(c.to);
  }
  if (s.completed == graph_.bytes) finish_copy(copy);
  try_issue(copy);
}

void TransferOperation::on_read_progress(uint32_t buffer) {
  const TransferBuffer& b = graph_.buffers[buffer];
  if (b.role != BufferRole::kIB || !b.producer) return;  // instances never refill
  BufferState& s = buffers_.at(buffer);
  TW_ASSERT_MSG(!s.consumer_read.empty(), "an IB buffer has a consumer");
  uint64_t read = s.consumer_read.front();
  for (uint64_t r : s.consumer_read) {
    read = bug_ == PlantedCollectiveBug::kMaxConsumerRead ? std::max(read, r) : std::min(read, r);
  }
  if (read <= s.reported_read) return;
  s.reported_read = read;
  const uint32_t producer = *b.producer;
  if (copies_.count(producer) != 0) {
    try_issue(producer);
  } else {
    CollectiveMessage m;
    m.type = CollectiveMessageType::kBytesRead;
    m.copy = producer;
    m.bytes_read = read;
    send_message(graph_.copies[producer].rank(), m);
  }
}

void TransferOperation::on_written(uint32_t buffer) {
  const TransferBuffer& b = graph_.buffers[buffer];
  BufferState& s = buffers_.at(buffer);
  for (uint32_t consumer : b.consumers) try_issue(consumer);
  if (b.role == BufferRole::kDestination && !s.complete && s.written == graph_.bytes) {
    s.complete = true;
    TW_ASSERT(destinations_unfinished_ > 0);
    --destinations_unfinished_;
    destination_done_ns_[buffer] = env_.clock.now_ns();
    if (observer_ != nullptr) observer_->on_destination_complete(buffer, env_.clock.now_ns());
  }
}

void TransferOperation::finish_copy(uint32_t copy) {
  CopyState& s = copies_.at(copy);
  if (s.finished) return;
  s.finished = true;
  TW_ASSERT(copies_unfinished_ > 0);
  --copies_unfinished_;
  if (observer_ != nullptr) observer_->on_copy_finished(copy);
  const uint32_t from = graph_.copies[copy].from;
  const TransferBuffer& b = graph_.buffers[from];
  if (b.role != BufferRole::kIB) return;
  BufferState& in = buffers_.at(from);
  if (in.freed) return;  // only with PlantedCollectiveBug::kFreeAtFirstConsumer
  TW_ASSERT_MSG(in.pool_offset.has_value(), "an IB buffer was placed in its pool");
  Pool& pool = pools_.at(b.memory);
  Result<bool> freed = pool.ib.do_free(*in.pool_offset);
  while (freed.is_ok() && !*freed && bug_ == PlantedCollectiveBug::kFreeAtFirstConsumer) {
    freed = pool.ib.do_free(*in.pool_offset);
  }
  if (!freed) {
    fail({freed.status().code(), b.name() + ": " + freed.status().message()});
    return;
  }
  coverage_.count(*freed ? BroadcastPath::kIbBufferFreed : BroadcastPath::kIbReferenceDropped);
  if (*freed) {
    in.freed = true;
    if (observer_ != nullptr) observer_->on_ib_freed(from);
  }
}

void TransferOperation::on_write_landed(RankId peer, uint32_t copy, uint32_t bytes) {
  const std::string where = "write-with-imm from rank " + std::to_string(peer) + " for copy " +
                            std::to_string(copy) + ": ";
  if (copy >= graph_.copies.size()) {
    fail({StatusCode::kMalformedMessage, where + "no such copy"});
    return;
  }
  const TransferCopy& c = graph_.copies[copy];
  if (!c.hop.network || c.rank() != peer || c.hop.to.node != my_rank()) {
    fail({StatusCode::kMalformedMessage, where + "that copy is not a write from that rank to this one"});
    return;
  }
  BufferState& s = buffers_.at(c.to);
  if (bytes == 0 || bytes > options_.max_chunk_bytes || bytes > graph_.bytes - s.written) {
    fail({StatusCode::kMalformedMessage,
          where + std::to_string(bytes) + " bytes: not a chunk this broadcast can have"});
    return;
  }
  // Into an IB ring, a writer may use only the room this rank has granted
  // (BYTES_READ); more would have overwritten bytes a consumer still needs.
  const TransferBuffer& target = graph_.buffers[c.to];
  if (target.role == BufferRole::kIB && s.written + bytes > s.reported_read + target.ring_bytes) {
    fail({StatusCode::kMalformedMessage, where + "wrote past the room granted in " + target.name()});
    return;
  }
  if (windowed_[c.to] && s.written + bytes > s.registered) {
    fail({StatusCode::kMalformedMessage, where + "wrote past the windows registered in " + target.name()});
    return;
  }
  s.written += bytes;
  if (windowed_[c.to]) {
    top_up_windows(c.to);
    if (!status_.is_ok()) return;
  }
  if (observer_ != nullptr) observer_->on_bytes_landed(c.to, s.written);
  on_written(c.to);
}

void TransferOperation::on_message(RankId peer, std::span<const std::byte> bytes) {
  Result<CollectiveMessage> decoded = CollectiveMessage::decode(bytes);
  if (!decoded) {
    fail({decoded.status().code(), "from rank " + std::to_string(peer) + ": " + decoded.status().message()});
    return;
  }
  const CollectiveMessage& m = *decoded;
  coverage_.count_received(m.type);
  if (m.type == CollectiveMessageType::kAbort) {
    on_abort(peer, m);
    return;
  }
  const std::string where = "message from rank " + std::to_string(peer) + " for copy " +
                            std::to_string(m.copy) + ": ";
  if (m.copy >= graph_.copies.size()) {
    fail({StatusCode::kMalformedMessage, where + "no such copy"});
    return;
  }
  const TransferCopy& c = graph_.copies[m.copy];
  if (!c.hop.network || c.rank() != my_rank() || c.hop.to.node != peer) {
    fail({StatusCode::kMalformedMessage, where + "that copy is not a write from this rank to that one"});
    return;
  }
  CopyState& s = copies_.at(m.copy);
  if (m.type == CollectiveMessageType::kIbReady) {
    if (s.ready || m.ring_bytes != graph_.buffers[c.to].ring_bytes) {
      fail({StatusCode::kMalformedMessage,
            where + (s.ready ? "a second IB_READY" : "IB_READY with a ring size the plan does not have")});
      return;
    }
    s.ready = true;
    s.remote_addr = m.addr;
    s.rkey = m.rkey;
    if (windowed_[c.to]) {
      s.window_rkeys.assign(1, m.rkey);
      s.window_end = std::min(options_.registration_window_bytes, graph_.bytes);
    }
  } else if (m.type == CollectiveMessageType::kWindowReady) {
    if (Status st = on_window_ready(m.copy, m); !st.is_ok()) {
      fail({st.code(), where + st.message()});
      return;
    }
  } else {
    // The reader may be ahead of this rank's completions (the write's ack is
    // still on its way), never ahead of what was issued.
    if (m.bytes_read > s.issued) {
      fail({StatusCode::kMalformedMessage, where + "BYTES_READ beyond what was written"});
      return;
    }
    s.downstream_read = std::max(s.downstream_read, m.bytes_read);
  }
  try_issue(m.copy);
}

void TransferOperation::send_message(RankId peer, const CollectiveMessage& m) {
  PeerState& p = peers_.at(peer);
  if (p.free_slots.empty()) {
    // BYTES_READ only grows: a newer one replaces a queued one for the same
    // copy, so the backlog holds at most one per copy plus the IB_READYs.
    if (m.type == CollectiveMessageType::kBytesRead) {
      for (CollectiveMessage& queued : p.backlog) {
        if (queued.type == m.type && queued.copy == m.copy) {
          queued.bytes_read = std::max(queued.bytes_read, m.bytes_read);
          return;
        }
      }
    }
    p.backlog.push_back(m);
    return;
  }
  const uint32_t slot = p.free_slots.back();
  p.free_slots.pop_back();
  TW_ASSERT(slot < kSendSlotsPerPeer);
  const auto bytes = m.encode();
  const Buffer slot_buffer{p.send_slots.addr + slot * kSlotBytes, kSlotBytes, p.send_slots.kind, 0};
  std::span<std::byte> view = env_.memory.host_view(slot_buffer);
  if (view.size() >= bytes.size()) std::copy(bytes.begin(), bytes.end(), view.begin());
  SendWorkRequest wr;
  wr.wr_id = make_wr_id(WrKind::kMessageSlot, peer, slot);
  wr.opcode = WorkOpcode::kSend;
  wr.local = Sge{slot_buffer.addr, static_cast<uint32_t>(kSlotBytes), p.send_lkey};
  ++messages_sent_;
  coverage_.count_sent(m.type);
  post_or_queue(peer, wr);
}

void TransferOperation::post_or_queue(RankId peer, const SendWorkRequest& wr) {
  PeerState& p = peers_.at(peer);
  if (!p.pending.empty()) {
    coverage_.count(BroadcastPath::kPostQueued);
    p.pending.push_back(wr);
    return;
  }
  Status st = env_.nic.post_send(p.qp, wr);
  if (st.code() == StatusCode::kNoResource) {
    coverage_.count(BroadcastPath::kPostQueued);
    p.pending.push_back(wr);
  } else if (!st.is_ok()) {
    fail(std::move(st));
  }
}

void TransferOperation::flush_pending(RankId peer) {
  PeerState& p = peers_.at(peer);
  while (!p.pending.empty()) {
    Status st = env_.nic.post_send(p.qp, p.pending.front());
    if (st.code() == StatusCode::kNoResource) return;
    p.pending.pop_front();
    if (!st.is_ok()) {
      fail(std::move(st));
      return;
    }
  }
}

// The NIC's completion handler is this operation's, but the NIC may have
// another user on this rank (tests play a misbehaving peer through it), so a
// completion this operation never asked for is outside input: it fails the
// operation (kInternal), it is not an assertion.
void TransferOperation::on_completion(const Completion& c) {
  if (peers_.count(c.peer) == 0) {
    fail({StatusCode::kInternal, "completion from rank " + std::to_string(c.peer) + ", not a peer"});
    return;
  }
  if (c.status != CompletionStatus::kSuccess) {
    fail({c.status == CompletionStatus::kRemoteAccessError ? StatusCode::kRemoteAccess
                                                           : StatusCode::kQpError,
          std::string(completion_opcode_name(c.opcode)) + " with rank " + std::to_string(c.peer) +
              " failed: " + completion_status_name(c.status)});
    return;
  }
  PeerState& p = peers_.at(c.peer);
  const uint32_t index = wr_index(c.wr_id);
  switch (wr_kind(c.wr_id)) {
    case WrKind::kRecvSlot: {
      if (index >= kRecvSlotsPerPeer) break;
      const Buffer slot{p.recv_ring.addr + index * kSlotBytes, kSlotBytes, p.recv_ring.kind, 0};
      if (c.opcode == CompletionOpcode::kRecvRdmaWithImm) {
        on_write_landed(c.peer, c.imm_data, c.byte_len);
      } else {
        std::span<std::byte> view = env_.memory.host_view(slot);
        on_message(c.peer, view.first(std::min<size_t>(view.size(), c.byte_len)));
      }
      RecvWorkRequest wr{c.wr_id, Sge{slot.addr, static_cast<uint32_t>(kSlotBytes), p.recv_lkey}};
      if (Status st = env_.nic.post_recv(p.qp, wr); !st.is_ok()) fail(std::move(st));
      return;
    }
    case WrKind::kMessageSlot:
      p.free_slots.push_back(index);
      if (!p.backlog.empty()) {
        CollectiveMessage m = p.backlog.front();
        p.backlog.pop_front();
        send_message(c.peer, m);
      }
      flush_pending(c.peer);
      return;
    case WrKind::kChunkWrite:
      if (copies_.count(index) == 0) break;
      on_chunk_complete(index, Status::ok());
      flush_pending(c.peer);
      return;
  }
  fail({StatusCode::kInternal, "completion with unknown work request id " + std::to_string(c.wr_id)});
}

void TransferOperation::release() {
  // Completions that still arrive (flushed receives) must not reach a
  // released or destroyed operation.
  if (started_) env_.nic.set_completion_handler([](const Completion&) {});
  for (const MemoryRegion& r : regions_) (void)env_.nic.deregister_memory(r);
  regions_.clear();
  for (const Buffer& b : allocations_) env_.memory.free(b);
  allocations_.clear();
}

}  // namespace tensorwire::collectives
