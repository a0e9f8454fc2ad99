#include "core/protocols/tf_verbs_zero_copy/rdma_channel.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/assert.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_write_id.h"

namespace tensorwire::tf_verbs {

RdmaChannel::RdmaChannel(RankId peer, Nic& nic, MemorySpace& memory, RdmaMemoryMgr& memory_mgr,
                         uint32_t ring_size)
    : peer_(peer),
      nic_(nic),
      memory_(memory),
      memory_mgr_(memory_mgr),
      qp_(nic.queue_pair_to(peer)),
      ring_size_(std::max<uint32_t>(ring_size, 1)),
      slot_bytes_(wire::max_encoded_size()) {
  TW_ASSERT_MSG(peer != nic.rank() && peer < nic.world_size(), "a channel connects two ranks");
}

Status RdmaChannel::start() {
  auto ring = memory_mgr_.allocate_registered(MemoryKind::kHostPinned, 0,
                                              slot_bytes_ * ring_size_, Access::kLocalWrite);
  if (!ring.is_ok()) return ring.status();
  ring_ = *ring;
  TW_ASSERT_MSG(ring_.region.has_value(), "the ring is registered: the NIC writes into it");
  // The whole ring in one list, as TF's channel posts its receives at setup.
  std::vector<RecvWorkRequest> ring_receives(ring_size_);
  for (uint32_t slot = 0; slot < ring_size_; ++slot) ring_receives[slot] = ring_receive(slot);
  if (Status st = nic_.post_recv_list(qp_, ring_receives); !st.is_ok()) return st;
  // Message buffers up front: a channel that could start can always send,
  // even when its rank later runs out of memory.
  return add_message_chunk();
}

std::vector<SendWorkRequest> RdmaChannel::mark_broken(Status why, bool finish_outgoing) {
  if (broken() || why.is_ok()) return {};
  failure_ = std::move(why);
  if (finish_outgoing) {
    draining_ = true;
    return {};
  }
  return stop_draining();
}

std::vector<SendWorkRequest> RdmaChannel::stop_draining() {
  draining_ = false;
  std::vector<SendWorkRequest> unposted(pending_.begin(), pending_.end());
  pending_.clear();
  backlog_.clear();  // never encoded, so nothing of ours to settle
  return unposted;
}

std::span<const std::byte> RdmaChannel::ring_bytes(uint64_t slot, uint32_t byte_len) {
  if (slot >= ring_size_ || byte_len > slot_bytes_) return {};
  // A view of the one slot, not the ring: the CPU reads only that message
  // (and the model checker sees that it reads nothing else).
  Buffer one = ring_.buffer;
  one.addr += slot * slot_bytes_;
  one.length = byte_len;
  if (!ring_.buffer.contains(one.addr, one.length)) return {};
  return memory_.host_view(one);
}

RecvWorkRequest RdmaChannel::ring_receive(uint64_t slot) const {
  TW_ASSERT_MSG(slot < ring_size_, "a ring slot in range");
  RecvWorkRequest wr;
  wr.wr_id = RdmaWriteID{RdmaWriteIDType::kRingReceive, slot}.encode();
  wr.local.addr = ring_.buffer.addr + slot * slot_bytes_;
  wr.local.length = static_cast<uint32_t>(slot_bytes_);
  wr.local.lkey = ring_.region->lkey;
  return wr;
}

Status RdmaChannel::repost(uint64_t slot) {
  if (slot >= ring_size_) return {StatusCode::kInvalidArgument, "ring slot out of range"};
  return nic_.post_recv(qp_, ring_receive(slot));
}

Status RdmaChannel::add_message_chunk() {
  auto chunk = memory_mgr_.allocate_registered(
      MemoryKind::kHostPinned, 0, slot_bytes_ * kMessageSlotsPerChunk, Access::kNone);  // send-only
  if (!chunk.is_ok()) return chunk.status();
  TW_ASSERT_MSG(chunk->region.has_value(), "message buffers are registered: the NIC reads them");
  uint64_t first = chunks_.size() * kMessageSlotsPerChunk;
  chunks_.push_back(*chunk);
  // Hand out low slots first (deterministic, and keeps the working set small).
  for (uint64_t i = kMessageSlotsPerChunk; i-- > 0;) free_slots_.push_back(first + i);
  return Status::ok();
}

Status RdmaChannel::send_message(const wire::RdmaMessage& message) {
  if (broken()) return failure_;
  // Checked now, not when a backlogged message finally gets its slot: a bad
  // message fails its caller, never the whole channel later.
  if (Status valid = wire::validate(message); !valid.is_ok()) return valid;
  if (wire::encoded_size(message) > slot_bytes_) {
    return {StatusCode::kInvalidArgument, "control message too large"};
  }
  if (!backlog_.empty()) {  // keep the order: behind those already waiting
    backlog_.push_back(message);
    return Status::ok();
  }
  if (free_slots_.empty() && !add_message_chunk().is_ok()) {
    backlog_.push_back(message);  // a slot comes back with the next send completion
    return Status::ok();
  }
  return post_in_free_slot(message);
}

Status RdmaChannel::post_in_free_slot(const wire::RdmaMessage& message) {
  TW_ASSERT(!free_slots_.empty());
  uint64_t slot = free_slots_.back();
  TW_ASSERT(slot < message_slots_total());
  const RegisteredBuffer& chunk = chunks_[slot / kMessageSlotsPerChunk];
  uint64_t offset = (slot % kMessageSlotsPerChunk) * slot_bytes_;
  size_t bytes = wire::encoded_size(message);
  // send_message checked every message, backlogged ones included, before
  // it got here.
  TW_ASSERT_MSG(bytes <= slot_bytes_, "a control message fits its slot");
  // The bytes of its slot the message is written into, and no more: the
  // simulator counts what a view covers as written (the pool zeroes it again
  // when the buffer is freed, a model checker digests it), and a message is
  // a few dozen bytes of a slot sized for the longest name.
  Buffer slot_buffer = chunk.buffer;
  slot_buffer.addr += offset;
  slot_buffer.length = bytes;
  std::span<std::byte> view =
      chunk.buffer.contains(slot_buffer.addr, slot_buffer.length) ? memory_.host_view(slot_buffer)
                                                                  : std::span<std::byte>();
  if (view.size() >= bytes) {
    Result<size_t> n = wire::encode(message, view);
    if (!n.is_ok()) return n.status();
    TW_ASSERT(*n == bytes);
    bytes = *n;
  }
  free_slots_.pop_back();
  SendWorkRequest wr;
  wr.wr_id = RdmaWriteID{RdmaWriteIDType::kControlMessage, slot}.encode();
  wr.opcode = WorkOpcode::kSend;
  wr.local.addr = chunk.buffer.addr + offset;
  wr.local.length = static_cast<uint32_t>(bytes);
  wr.local.lkey = chunk.region->lkey;
  Status st = post_or_queue(wr);
  if (!st.is_ok()) free_slots_.push_back(slot);
  return st;
}

Status RdmaChannel::message_sent(uint64_t slot) {
  if (slot >= message_slots_total()) return Status::ok();
  if (std::find(free_slots_.begin(), free_slots_.end(), slot) != free_slots_.end()) {
    return Status::ok();
  }
  free_slots_.push_back(slot);
  TW_ASSERT_MSG(free_slots_.size() <= message_slots_total(), "a slot is freed once per send");
  if (backlog_.empty() || (broken() && !draining_)) return Status::ok();
  wire::RdmaMessage next = std::move(backlog_.front());
  backlog_.pop_front();
  return post_in_free_slot(next);
}

Status RdmaChannel::post(const SendWorkRequest& wr) {
  if (broken()) return failure_;
  return post_or_queue(wr);
}

Status RdmaChannel::post_or_queue(const SendWorkRequest& wr) {
  if (!pending_.empty()) {
    pending_.push_back(wr);
    return Status::ok();
  }
  Status st = nic_.post_send(qp_, wr);
  if (st.code() == StatusCode::kNoResource) {
    pending_.push_back(wr);
    return Status::ok();
  }
  return st;
}

Status RdmaChannel::drain_pending() {
  while (!pending_.empty() && (!broken() || draining_)) {
    Status st = nic_.post_send(qp_, pending_.front());
    if (st.code() == StatusCode::kNoResource) return Status::ok();
    if (!st.is_ok()) return st;
    pending_.pop_front();
  }
  return Status::ok();
}

void RdmaChannel::digest(StateDigest& d) const {
  d.add(peer_).add(static_cast<uint64_t>(failure_.code())).add(draining_ ? 1 : 0);
  d.add(chunks_.size()).add(pending_.size()).add(backlog_.size());
  for (const SendWorkRequest& wr : pending_) {
    d.add(wr.wr_id).add(static_cast<uint64_t>(wr.opcode)).add(wr.local.addr).add(wr.local.length);
    d.add(wr.local.lkey).add(wr.remote_addr).add(wr.rkey).add(wr.imm_data);
  }
  // A message waiting for a slot, as it will go on the wire.
  std::vector<std::byte> encoded(backlog_.empty() ? 0 : wire::max_encoded_size());
  for (const wire::RdmaMessage& message : backlog_) {
    const Result<size_t> n = wire::encode(message, encoded);
    d.add(n.is_ok() ? std::string_view(reinterpret_cast<const char*>(encoded.data()), *n) : std::string_view("?"));
  }
  d.add(free_slots_.size());
  for (uint64_t slot : free_slots_) d.add(slot);
}

}  // namespace tensorwire::tf_verbs
