// One rank's part of a collective copy: it runs the copies (XferDes) whose
// input lives on this rank, owns the IB buffers in its memories, and signals
// the ranks upstream and downstream, as Realm's TransferOperation does for the
// XferDes it creates on a node.
//
// Data moves through each copy in a pipeline of chunks. A copy issues a chunk
// when its input holds at least min_chunk_bytes it has not moved (or the rest
// of the stream, or up to the end of a ring) and its output has room: an IB
// buffer is a ring, and its producer may reuse bytes only once every consumer
// has read them (the minimum over consumers). A destination instance that
// feeds others (an entry buffer) is signalled like an IB buffer but holds the
// whole message, so its producer never waits for room, and it is never freed.
//
// A rank whose part fails before it finished (a failed completion, a
// malformed message) tells every peer ABORT; a peer that has not finished
// ends its part with kAborted and tells its own peers, so every live rank
// connected to the failure ends with an error instead of waiting for ever.
//
// Single-threaded and event-driven: everything happens in NIC completions,
// copy-engine callbacks and start().
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/protocols/realm_broadcast/broadcast_coverage.h"
#include "core/protocols/realm_broadcast/broadcast_planner.h"
#include "core/protocols/realm_broadcast/collective_message.h"
#include "core/protocols/realm_broadcast/collective_observer.h"
#include "core/protocols/realm_broadcast/ib_memory.h"
#include "core/protocols/realm_broadcast/planted_collective_bug.h"
#include "core/protocols/realm_broadcast/transfer_graph.h"
#include "core/protocol_counters.h"
#include "core/rank_env.h"

namespace tensorwire::collectives {

class TransferOperation {
 public:
  // Receives kept posted per peer it signals: each control message and each
  // write with immediate into this rank consumes one (a real receive queue
  // must hold them all).
  static constexpr uint32_t kReceivesPerPeer = 256;

  TransferOperation(RankEnv env, const TransferGraph& graph, const ClusterTopology& topology,
                    BroadcastOptions options, CollectiveObserver* observer = nullptr,
                    PlantedCollectiveBug bug = PlantedCollectiveBug::kNone);
  ~TransferOperation();
  TransferOperation(const TransferOperation&) = delete;
  TransferOperation& operator=(const TransferOperation&) = delete;

  // `instances`: this rank's source and destination instances, by buffer id,
  // allocated by the caller (they are the application's, not the pool's).
  // Allocates IB buffers, registers memory, posts receives and tells writers
  // where to write. A non-ok return means nothing was started.
  Status start(const std::map<uint32_t, Buffer>& instances);

  // Every copy this rank runs has finished and every destination on it is full.
  bool finished() const;
  // The first error (a failed completion, a malformed message, a peer's
  // ABORT: kAborted); ok otherwise.
  const Status& status() const { return status_; }

  // When each destination on this rank held every byte.
  const std::map<uint32_t, TimeNs>& destination_done_ns() const { return destination_done_ns_; }
  // When each copy this rank runs issued its first chunk.
  const std::map<uint32_t, TimeNs>& copy_first_busy_ns() const { return copy_first_busy_ns_; }
  // Peak bytes of IB memory in use, over all this rank's pools.
  uint64_t peak_ib_bytes() const { return peak_ib_bytes_; }
  uint64_t ib_bytes_in_use() const;
  uint64_t chunks_issued() const { return chunks_issued_; }
  uint64_t messages_sent() const { return messages_sent_; }
  // The same, as the protocol's named counters for the report (peak IB bytes
  // sums over the ranks into the cluster's total of per-rank peaks).
  ProtocolCounters counters() const {
    return {{"chunks", CounterRole::kContentTransfer, chunks_issued_},
            {"control_messages", CounterRole::kControlMessage, messages_sent_},
            {"peak_ib_bytes", CounterRole::kOther, peak_ib_bytes_}};
  }

  // The messages and paths this rank's part reached (broadcast_coverage.h).
  const BroadcastCoverageCounts& coverage_counts() const { return coverage_; }

  // Deregisters and frees what start() allocated and detaches from the NIC's
  // completions. Call it once the backend is idle (copy-engine callbacks in
  // flight would still reach this object). Not called by the destructor: the
  // backend may be gone by then.
  void release();

 private:
  struct BufferState;
  struct CopyState;
  struct PeerState;
  struct NetworkUse;

  // start()'s stages: this rank's instances and IB buffers placed and
  // registered where the NIC touches them, the copies it runs, the peers it
  // signals connected (receives posted), and the writers told where to write.
  Status place_instances(const std::map<uint32_t, Buffer>& instances, const NetworkUse& network,
                         std::map<MemoryId, std::vector<uint32_t>>& ibs_by_memory);
  Status place_ib_pool(const MemoryId& memory, const std::vector<uint32_t>& ids,
                       const NetworkUse& network);
  Status register_for_network(uint32_t buffer, const NetworkUse& network);
  std::vector<RankId> plan_copies();  // the peers this rank exchanges signals with
  Status connect_peers(const std::vector<RankId>& peer_ranks);
  void announce_ib_ready();

  void on_completion(const Completion& c);
  void on_message(RankId peer, std::span<const std::byte> bytes);
  void on_write_landed(RankId peer, uint32_t copy, uint32_t bytes);
  void on_chunk_complete(uint32_t copy, Status status);
  void try_issue(uint32_t copy);
  void write_chunk(uint32_t copy, uint64_t off_in, uint64_t off_out, uint64_t len);
  void on_written(uint32_t buffer);
  void on_read_progress(uint32_t buffer);
  void finish_copy(uint32_t copy);
  void send_message(RankId peer, const CollectiveMessage& m);
  void post_or_queue(RankId peer, const SendWorkRequest& wr);
  void flush_pending(RankId peer);
  void fail(Status status);
  void on_abort(RankId peer, const CollectiveMessage& abort);
  void end_part(Status status, const CollectiveMessage& abort, std::optional<RankId> told_by);
  uint64_t downstream_limit(uint32_t copy) const;
  // Registration windows (transfer_operation_windows.cc).
  void mark_windowed(const NetworkUse& network);
  Status register_first_window(uint32_t buffer);
  void top_up_windows(uint32_t buffer);
  Status on_window_ready(uint32_t copy, const CollectiveMessage& m);
  uint64_t room_to_window_end(uint32_t copy, uint64_t off_out) const;
  uint32_t window_rkey(uint32_t copy, uint64_t off_out) const;
  uint32_t my_rank() const { return env_.nic.rank(); }
  bool mine(uint32_t buffer) const;

  RankEnv env_;
  const TransferGraph& graph_;
  const ClusterTopology& topology_;
  BroadcastOptions options_;
  CollectiveObserver* observer_;
  PlantedCollectiveBug bug_;
  Status status_;
  bool started_ = false;

  std::map<uint32_t, BufferState> buffers_;  // buffers on this rank
  // By buffer id, on every rank alike: an instance the network writes into
  // (and does not read from) that is registered in windows.
  std::vector<bool> windowed_;
  std::map<uint32_t, CopyState> copies_;     // copies this rank runs
  std::map<RankId, PeerState> peers_;
  struct Pool;
  std::map<MemoryId, Pool> pools_;
  std::vector<MemoryRegion> regions_;  // every registration, for release()
  std::vector<Buffer> allocations_;    // everything allocated here, for release()
  std::map<uint32_t, TimeNs> destination_done_ns_;
  std::map<uint32_t, TimeNs> copy_first_busy_ns_;
  uint64_t peak_ib_bytes_ = 0;
  uint64_t chunks_issued_ = 0;
  uint64_t messages_sent_ = 0;
  BroadcastCoverageCounts coverage_;
  size_t copies_unfinished_ = 0;
  size_t destinations_unfinished_ = 0;
};

}  // namespace tensorwire::collectives
