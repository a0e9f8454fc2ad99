#include "backend_sim/transfer_ledger.h"

#include <algorithm>

#include "core/assert.h"

namespace tensorwire::sim {

void TransferLedger::on_posted(uint64_t seq, uint64_t tag, uint32_t rank, uint32_t peer,
                               const SendWorkRequest& wr, TimeNs now_ns) {
  if (!enabled_) return;
  InFlight f;
  f.tag = owner(tag);
  f.rank = rank;
  f.peer = peer;
  f.posted_ns = now_ns;
  f.control = wr.local.length <= kControlMaxBytes;
  // A send and a write with immediate also complete at the receiver.
  const bool consumes_receive =
      wr.opcode == WorkOpcode::kSend || wr.opcode == WorkOpcode::kRdmaWriteWithImm;
  f.handlers_left = consumes_receive ? 2 : 1;
  // Sequence numbers are never reused (RcTransport counts them up): the
  // insertion asserts the request is new.
  in_flight_.insert(seq, f);
  if (f.control && f.tag != 0) accounts_[f.tag].control_messages += 1;
}

void TransferLedger::on_wire_start(uint64_t seq, TimeNs now_ns) {
  if (!enabled_) return;
  if (InFlight* f = in_flight_.find(seq)) f->wire_start_ns = now_ns;
}

void TransferLedger::on_landed(uint64_t seq, TimeNs now_ns) {
  if (!enabled_) return;
  InFlight* f = in_flight_.find(seq);
  if (f == nullptr || f->landed) return;
  f->landed = true;
  close(*f, now_ns);
}

uint64_t TransferLedger::take_handler(uint64_t seq, TimeNs now_ns) {
  if (seq == 0 || !enabled_) return 0;
  InFlight* f = in_flight_.find(seq);
  if (f == nullptr) return 0;
  const uint64_t tag = f->tag;
  TW_ASSERT_MSG(f->handlers_left > 0, "a record goes with its last handler");
  if (--f->handlers_left == 0) {
    if (!f->landed) close(*f, now_ns);
    in_flight_.erase(seq);
  }
  return tag;
}

void TransferLedger::on_flushed(uint64_t seq) {
  if (!enabled_) return;
  InFlight* f = in_flight_.find(seq);
  if (f == nullptr) return;
  TW_ASSERT_MSG(f->handlers_left > 0, "a flushed request still has its sender's completion to come");
  if (!f->landed || --f->handlers_left == 0) in_flight_.erase(seq);
}

void TransferLedger::add_copy(uint64_t tag, uint32_t rank, TimeNs submitted_ns, TimeNs start_ns,
                              TimeNs end_ns) {
  if (!enabled_) return;
  const uint64_t own = owner(tag);
  if (start_ns > submitted_ns) add(own, rank, rank, false, {ActivityKind::kQueueing, submitted_ns, start_ns});
  if (end_ns > start_ns) add(own, rank, rank, false, {ActivityKind::kCopy, start_ns, end_ns});
}

void TransferLedger::on_transfer_done(uint64_t tag) {
  if (tag != 0 && enabled_) finished_.insert(tag);
}

void TransferLedger::close(const InFlight& f, TimeNs end_ns) {
  if (f.control) {
    add(f.tag, f.rank, f.peer, true, {ActivityKind::kControl, f.posted_ns, end_ns});
    return;
  }
  // Never on the wire (a flush): all of it was waiting to go.
  const TimeNs wire_start = f.wire_start_ns < 0 ? end_ns : std::min(f.wire_start_ns, end_ns);
  if (wire_start > f.posted_ns) {
    add(f.tag, f.rank, f.peer, false, {ActivityKind::kQueueing, f.posted_ns, wire_start});
  }
  if (end_ns > wire_start) add(f.tag, f.rank, f.peer, false, {ActivityKind::kWire, wire_start, end_ns});
}

void TransferLedger::add(uint64_t tag, uint32_t rank, uint32_t peer, bool control,
                         TransferActivity a) {
  TW_ASSERT(a.end_ns >= a.start_ns);
  if (tag != 0) {
    std::vector<TransferActivity>& own = accounts_[tag].activities;
    // A transfer typically has a handful: grow once, not four times.
    if (own.empty()) own.reserve(8);
    own.push_back(a);
    return;
  }
  if (!unowned_.empty() && a.start_ns < unowned_.back().activity.start_ns) unowned_sorted_ = false;
  longest_unowned_ns_ = std::max(longest_unowned_ns_, a.end_ns - a.start_ns);
  unowned_.push_back({a, rank, peer, control});
}

TransferLedger::Share TransferLedger::share_of(uint64_t tag, uint32_t src, uint32_t dst,
                                               TimeNs from_ns, TimeNs to_ns) const {
  TW_ASSERT_MSG(enabled_, "breakdowns are asked of a run that keeps its ledger");
  Share share;
  if (auto it = accounts_.find(tag); it != accounts_.end()) {
    share.activities = it->second.activities;
    share.control_messages = it->second.control_messages;
  }
  if (!unowned_sorted_) {
    std::stable_sort(unowned_.begin(), unowned_.end(), [](const Unowned& x, const Unowned& y) {
      return x.activity.start_ns < y.activity.start_ns;
    });
    unowned_sorted_ = true;
  }
  // Only activities starting after from - longest can overlap the window.
  auto first = std::lower_bound(unowned_.begin(), unowned_.end(), from_ns - longest_unowned_ns_,
                                [](const Unowned& u, TimeNs t) { return u.activity.start_ns < t; });
  const auto between = [src, dst](uint32_t r) { return r == src || r == dst; };
  for (auto it = first; it != unowned_.end() && it->activity.start_ns < to_ns; ++it) {
    if (it->activity.end_ns <= from_ns || !between(it->rank) || !between(it->peer)) continue;
    share.activities.push_back(it->activity);
    if (it->control && it->activity.start_ns >= from_ns) share.control_messages += 1;
  }
  return share;
}

}  // namespace tensorwire::sim
