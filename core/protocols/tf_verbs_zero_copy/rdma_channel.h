// RdmaChannel: this rank's end of the connection to one peer.
//
// - The queue pair (connected by the backend before start).
// - The control ring: control_ring_size receives, pre-posted into one
//   registered host buffer (local write only: only the NIC writes into it).
//   Every receive consumed — by a control message (kRecv) or by a peer's
//   write-with-imm (kRecvRdmaWithImm) — is reposted once handled.
// - Message buffers for outgoing control messages: a growing pool of
//   registered slots, so control messages never wait for one another (the
//   original design's single message buffer + ACK serialized them).
// - A pending queue: a post the send queue refuses with kNoResource is kept,
//   in order, and retried after the next send-side completion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "core/memory.h"
#include "core/nic.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_memory_mgr.h"
#include "core/status.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_message.h"

namespace tensorwire::tf_verbs {

class RdmaChannel {
 public:
  // Message-buffer slots are added this many at a time (one registration each).
  static constexpr uint32_t kMessageSlotsPerChunk = 16;

  RdmaChannel(RankId peer, Nic& nic, MemorySpace& memory, RdmaMemoryMgr& memory_mgr,
              uint32_t ring_size);
  RdmaChannel(const RdmaChannel&) = delete;
  RdmaChannel& operator=(const RdmaChannel&) = delete;

  // Allocates and registers the ring and posts every receive.
  Status start();

  RankId peer() const { return peer_; }
  QpHandle qp() const { return qp_; }

  // A broken channel accepts no more work; `failure` says why. Marking it
  // broken hands back the work requests still queued behind a full send
  // queue: the NIC never saw them, so no completion (not even a flush) will
  // come for them and the caller must settle their owners itself.
  //
  // With `finish_outgoing` (we close it, the queue pair still works) the
  // channel refuses new work but still sends what is queued, ERROR_STATUS
  // answers above all; stop_draining() ends that if the queue pair fails too.
  bool broken() const { return !failure_.is_ok(); }
  const Status& failure() const { return failure_; }
  std::vector<SendWorkRequest> mark_broken(Status why, bool finish_outgoing = false);
  bool draining() const { return draining_; }
  std::vector<SendWorkRequest> stop_draining();

  // --- control ring ---
  uint32_t ring_size() const { return ring_size_; }
  // The bytes a receive into `slot` delivered (empty without payload or when
  // the slot or length is out of range: the caller treats that as malformed).
  std::span<const std::byte> ring_bytes(uint64_t slot, uint32_t byte_len);
  Status repost(uint64_t slot);

  // --- outgoing ---
  // Encodes `message` into a free message slot and posts (or queues) its send.
  // With every slot busy and no memory for more, the message waits in a
  // backlog for a slot to come back: a control message (an ERROR_STATUS
  // above all) is never dropped for lack of buffers while the channel works.
  Status send_message(const wire::RdmaMessage& message);
  // The send of message slot `slot` completed (any status): the slot is free,
  // and the oldest waiting message goes out in it.
  Status message_sent(uint64_t slot);
  size_t messages_waiting() const { return backlog_.size(); }
  // Posts `wr` now, or queues it when the send queue is full or others wait.
  Status post(const SendWorkRequest& wr);
  // Retries queued posts; call after every send-side completion.
  Status drain_pending();
  size_t pending_posts() const { return pending_.size(); }
  size_t messages_in_flight() const { return message_slots_total() - free_slots_.size(); }
  void digest(StateDigest& d) const;  // for model checkers' state caches

 private:
  // The receive that puts ring slot `slot` back on the queue.
  RecvWorkRequest ring_receive(uint64_t slot) const;
  size_t message_slots_total() const { return chunks_.size() * kMessageSlotsPerChunk; }
  Status add_message_chunk();
  Status post_in_free_slot(const wire::RdmaMessage& message);
  Status post_or_queue(const SendWorkRequest& wr);

  RankId peer_;
  Nic& nic_;
  MemorySpace& memory_;
  RdmaMemoryMgr& memory_mgr_;
  QpHandle qp_;
  uint32_t ring_size_;
  uint64_t slot_bytes_;  // wire::max_encoded_size()
  Status failure_;
  RegisteredBuffer ring_;
  std::vector<RegisteredBuffer> chunks_;  // message buffers
  std::vector<uint64_t> free_slots_;
  std::deque<SendWorkRequest> pending_;
  std::deque<wire::RdmaMessage> backlog_;  // messages waiting for a free slot
  bool draining_ = false;                  // broken, but still sending what is queued
};

}  // namespace tensorwire::tf_verbs
