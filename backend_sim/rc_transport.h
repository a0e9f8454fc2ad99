// Reliable-connected queue pairs between every pair of simulated ranks, with
// verbs semantics: each QP moves its work requests one at a time through the
// ports (in order), a send needs a receive the peer posted in advance (else
// receiver-not-ready and a retry), RDMA writes and reads are checked against
// the target's registered regions, and any error moves the QP to the error
// state and flushes its outstanding work, as on an HCA.
//
// Timing of one operation of `n` bytes between idle ports:
//   send / write:  the receiver's completion at latency + n/bandwidth, the
//                  sender's one latency later (the acknowledgement);
//   read:          the request takes one latency, the data latency + n/bandwidth.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "backend_sim/fair_share_ports.h"
#include "backend_sim/memory_registry.h"
#include "backend_sim/peer_table.h"
#include "backend_sim/posted_requests.h"
#include "backend_sim/sim_context.h"
#include "backend_sim/sim_memory.h"
#include "core/assert.h"
#include "core/nic.h"
#include "core/state_digest.h"

namespace tensorwire::sim {

class RcTransport {
 public:
  RcTransport(SimContext& context, std::vector<SimMemorySpace*> memories,
              std::vector<MemoryRegistry*> registries);

  QpState state(uint32_t rank, uint32_t peer) const;
  Status post_send(uint32_t rank, uint32_t peer, const SendWorkRequest& wr);
  Status post_recv(uint32_t rank, uint32_t peer, const RecvWorkRequest& wr);
  // The list in one step: nothing of the QP changes between two of its
  // receives, so one check and one look at waiting arrivals serve them all.
  Status post_recv_list(uint32_t rank, uint32_t peer, std::span<const RecvWorkRequest> wrs);
  void set_handler(uint32_t rank, CompletionHandler handler);

  // Faults.
  void break_pair(uint32_t a, uint32_t b);
  void crash(uint32_t rank);
  // Every queue pair's state, queues and arrivals: for model checkers.
  void digest(StateDigest& d) const;

 private:
  // A message on its way from `rank` to `peer`, queued at the receiving end in
  // QP order so that a receiver-not-ready wait holds back what follows it.
  struct Arrival {
    uint64_t seq = 0;  // the sender's work request
    SendWorkRequest wr;
    // What the NIC read from the source when it put the request on the
    // wire; copy-on-write for large messages (SimMemorySpace::hold_read).
    HeldBytes payload;
    bool arrived = false;
    uint32_t rnr_tries = 0;
  };
  struct QueuePair {
    QpState state = QpState::kReadyToSend;
    PostedRequests outstanding;  // posted, not completed, by seq
    std::deque<uint64_t> send_queue;                   // posted, not yet on the wire
    bool wire_busy = false;                            // one request at a time, in order
    FlowId flow = 0;
    bool flow_live = false;
    EventId pump_event;
    std::deque<RecvWorkRequest> recvs;  // posted receives
    std::deque<Arrival> arrivals;       // from the peer, in its posting order
    bool rnr_waiting = false;
    TimeNs last_completion_ns = -1;     // keeps this QP's completions strictly ordered
    // The last work request of this end whose completion was delivered (or
    // scheduled as a flush): a QP's requests complete in posting order.
    uint64_t last_completed_seq = 0;
    // A request the NIC could not read (a local protection error) while
    // requests ahead of it were still on their way: it completes, in error,
    // once they have (0: none).
    uint64_t failed_seq = 0;
  };

  struct LastPair {
    uint32_t peer = UINT32_MAX;
    QueuePair* pair = nullptr;
  };
  // Inline for the hit, which every post, wire step and completion takes
  // (nine calls per RDMA write in BM_SimulatorEventLoop).
  QueuePair& pair_of(uint32_t rank, uint32_t peer) {
    TW_ASSERT_HOT(rank < qps_.size() && peer < qps_.size() && rank != peer);
    const LastPair& last = last_pair_[rank];
    if (last.peer == peer) return *last.pair;
    return find_or_make_pair(rank, peer);
  }
  QueuePair& find_or_make_pair(uint32_t rank, uint32_t peer);
  const QueuePair* find_qp(uint32_t rank, uint32_t peer) const;
  QpState state_of(uint32_t rank, uint32_t peer) const {
    const QueuePair* pair = find_qp(rank, peer);
    return pair == nullptr ? QpState::kReadyToSend : pair->state;
  }
  void pump(uint32_t rank, uint32_t peer);
  void start_read(uint32_t rank, uint32_t peer, uint64_t seq, const SendWorkRequest& wr);
  void on_drained(uint32_t rank, uint32_t peer, uint64_t seq, TimeNs started_ns);
  // Request `seq`, at the head of the send queue, failed the NIC's local
  // checks: it completes in error after the requests ahead of it.
  void fail_locally(uint32_t rank, uint32_t peer, uint64_t seq);
  void process_arrivals(uint32_t receiver, uint32_t sender);
  // Completion of the sender's work request `seq` at time `at`; an error
  // status also moves the QP to error when it is delivered.
  // `cause_seq`: the message the completion reports the arrival of (a read's
  // response), 0 for none.
  void complete_send(uint32_t rank, uint32_t peer, uint64_t seq, TimeNs at,
                     CompletionStatus status, uint32_t byte_len, uint64_t cause_seq = 0);
  // Schedules `completion` for rank's progress loop at `at` (or just after
  // the QP's previous completion); `cause_seq` is the message it reports the
  // arrival of (0: none).
  void deliver(uint32_t rank, uint32_t peer, TimeNs at, Completion completion,
               uint64_t cause_seq = 0);
  // Schedules the completions a QP's error flushed as ONE event, just after
  // the QP's previous completion: the HCA generates every flushed completion
  // when the QP enters the error state, so one poll of the CQ finds them all,
  // in posting order. (One event each would let a model checker interleave
  // the rank's other events between them: orders a poller never sees apart
  // from its own choice to stop polling, at a cost of one state per flushed
  // receive and rank.)
  void deliver_flush(uint32_t rank, uint32_t peer, std::vector<Completion> batch);
  // Gives a completion to rank's handler now; what the handler posts counts
  // as caused by message `cause_seq` (the trace's flow arrows), and works for
  // the transfer work request `tag_seq` was tagged with (0: none).
  void hand_over(uint32_t rank, const Completion& completion, uint64_t cause_seq = 0,
                 uint64_t tag_seq = 0);
  void enter_error(uint32_t rank, uint32_t peer, CompletionStatus first_status);
  void trace_error(uint32_t rank, uint32_t peer, const char* what, const Status& why);

  SimContext& context_;
  std::vector<SimMemorySpace*> memories_;
  std::vector<MemoryRegistry*> registries_;
  FairSharePorts ports_;
  // [rank] -> peer -> its end of the pair, made on first use: memory grows
  // with the pairs that talk, not with nodes squared.
  std::vector<PeerTable<QueuePair>> qps_;
  // [rank] -> the pair pair_of found last: a rank's events come in runs on
  // one queue pair (post, wire, completion), and a hit skips the table.
  std::vector<LastPair> last_pair_;
  std::vector<CompletionHandler> handlers_;
  uint64_t next_seq_ = 1;
  // Tracing only: a posted work request -> the message whose handling posted
  // it, until the request's slice is written (lookup only, never iterated).
  std::unordered_map<uint64_t, uint64_t> causes_;
};

}  // namespace tensorwire::sim
