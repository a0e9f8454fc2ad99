// The simulator's record of where each tensor transfer's work spent its time
// (core/transfer_attribution.h, core/transfer_breakdown.h): every work
// request and copy posted while a transfer is current is tagged with it, and
// its intervals are kept under that tag:
//   a data work request: queueing from post to its first byte on the wire
//     (the NIC waiting for the CPU, the send queue, the QP's requests ahead),
//     wire from there to its bytes landing at the target (a read: its
//     request leaving to its response landing);
//   a control message (kControlMaxBytes or less: requests, acks, meta-data,
//     immediates): control for its whole life from post to landing;
//   a copy: queueing from submission to its start, copies while the engine
//     or CPU does it.
// Work posted under no transfer, or under one whose Recv is already done (a
// protocol draining its own queue from another transfer's handler, channel
// set-up), is kept apart with its two ranks: it counts for every transfer
// between those ranks whose wait it overlaps (no transfer owns it).
// Kept for the whole run, a few intervals per request.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backend_sim/dense_id_map.h"
#include "core/clock.h"
#include "core/nic.h"
#include "core/transfer_breakdown.h"

namespace tensorwire::sim {

class TransferLedger {
 public:
  // A ledger that is not `enabled` records nothing and is never asked.
  explicit TransferLedger(bool enabled = true) : enabled_(enabled) {}

  // The largest work request that counts as a control message.
  static constexpr uint32_t kControlMaxBytes = 256;

  // Work request `seq` from `rank` to `peer` posted now while `tag` is
  // current (0: none).
  void on_posted(uint64_t seq, uint64_t tag, uint32_t rank, uint32_t peer,
                 const SendWorkRequest& wr, TimeNs now_ns);
  void on_wire_start(uint64_t seq, TimeNs now_ns);
  // Its bytes landed at the target (a read's: at the requester).
  void on_landed(uint64_t seq, TimeNs now_ns);
  // One of `seq`'s completions is about to be handled (the sender's, or the
  // receiver's for a message that consumes a receive): its tag, which the
  // handler runs under. The record goes with the last one.
  uint64_t take_handler(uint64_t seq, TimeNs now_ns);
  // A copy on `rank` submitted at `submitted_ns` that runs [start_ns, end_ns).
  void add_copy(uint64_t tag, uint32_t rank, TimeNs submitted_ns, TimeNs start_ns, TimeNs end_ns);
  // Work request `seq` was flushed: its sender's completion is handed over
  // under no transfer, and if it never landed no receiver's completion will
  // come either. Its record goes once nothing is left to take it (kept, a
  // flushed request's record held its DenseIdMap chunk for the whole run);
  // it is not closed, so a flushed request's intervals count for nothing,
  // as before.
  void on_flushed(uint64_t seq);
  // Transfer `tag`'s Recv is done: what is posted under it from now on is
  // no transfer's.
  void on_transfer_done(uint64_t tag);

  // What counts for transfer `tag` from src to dst within [from_ns, to_ns):
  // its own activities and the unowned ones between its ranks; its control
  // messages likewise (the unowned ones that started within the window).
  struct Share {
    std::vector<TransferActivity> activities;
    uint64_t control_messages = 0;
  };
  Share share_of(uint64_t tag, uint32_t src, uint32_t dst, TimeNs from_ns, TimeNs to_ns) const;

 private:
  struct InFlight {
    uint64_t tag = 0;  // 0: no transfer's
    uint32_t rank = 0;
    uint32_t peer = 0;
    TimeNs posted_ns = 0;
    TimeNs wire_start_ns = -1;  // -1: not on the wire yet
    bool control = false;
    bool landed = false;
    uint8_t handlers_left = 1;
  };
  struct Account {
    std::vector<TransferActivity> activities;
    uint64_t control_messages = 0;
  };
  // Closes `f`'s intervals at `end_ns` (landing, or its completion when it
  // never landed: an error).
  void close(const InFlight& f, TimeNs end_ns);

  struct Unowned {
    TransferActivity activity;
    uint32_t rank = 0;  // a copy's rank, a request's two ends
    uint32_t peer = 0;
    bool control = false;
  };
  void add(uint64_t tag, uint32_t rank, uint32_t peer, bool control, TransferActivity a);
  uint64_t owner(uint64_t tag) const { return tag != 0 && finished_.count(tag) == 0 ? tag : 0; }

  bool enabled_;
  DenseIdMap<InFlight> in_flight_;  // by work request seq
  std::unordered_map<uint64_t, Account> accounts_;    // by transfer tag
  std::unordered_set<uint64_t> finished_;             // transfers whose Recv is done
  // By start time once share_of sorted them; the longest bounds the search.
  // A deque: kept for the whole run (one per untagged control message), it
  // grows without copying what it holds.
  mutable std::deque<Unowned> unowned_;
  mutable bool unowned_sorted_ = true;
  TimeNs longest_unowned_ns_ = 0;
};

}  // namespace tensorwire::sim
