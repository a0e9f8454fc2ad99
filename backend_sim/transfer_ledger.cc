#include "backend_sim/transfer_ledger.h"

#include <algorithm>

namespace tensorwire::sim {

void TransferLedger::on_posted(uint64_t seq, uint64_t tag, const SendWorkRequest& wr,
                               TimeNs now_ns) {
  if (tag == 0) return;
  InFlight f;
  f.tag = tag;
  f.posted_ns = now_ns;
  f.control = wr.local.length <= kControlMaxBytes;
  // A send and a write with immediate also complete at the receiver.
  const bool consumes_receive =
      wr.opcode == WorkOpcode::kSend || wr.opcode == WorkOpcode::kRdmaWriteWithImm;
  f.handlers_left = consumes_receive ? 2 : 1;
  in_flight_[seq] = f;
  if (f.control) accounts_[tag].control_messages += 1;
}

void TransferLedger::on_wire_start(uint64_t seq, TimeNs now_ns) {
  auto it = in_flight_.find(seq);
  if (it != in_flight_.end()) it->second.wire_start_ns = now_ns;
}

void TransferLedger::on_landed(uint64_t seq, TimeNs now_ns) {
  auto it = in_flight_.find(seq);
  if (it == in_flight_.end() || it->second.landed) return;
  it->second.landed = true;
  close(it->second, now_ns);
}

uint64_t TransferLedger::take_handler(uint64_t seq, TimeNs now_ns) {
  if (seq == 0) return 0;
  auto it = in_flight_.find(seq);
  if (it == in_flight_.end()) return 0;
  const uint64_t tag = it->second.tag;
  if (--it->second.handlers_left == 0) {
    if (!it->second.landed) close(it->second, now_ns);
    in_flight_.erase(it);
  }
  return tag;
}

void TransferLedger::add_copy(uint64_t tag, TimeNs submitted_ns, TimeNs start_ns, TimeNs end_ns) {
  if (tag == 0) return;
  std::vector<TransferActivity>& a = accounts_[tag].activities;
  if (start_ns > submitted_ns) a.push_back({ActivityKind::kQueueing, submitted_ns, start_ns});
  if (end_ns > start_ns) a.push_back({ActivityKind::kCopy, start_ns, end_ns});
}

void TransferLedger::close(const InFlight& f, TimeNs end_ns) {
  std::vector<TransferActivity>& a = accounts_[f.tag].activities;
  if (f.control) {
    a.push_back({ActivityKind::kControl, f.posted_ns, end_ns});
    return;
  }
  // Never on the wire (a flush): all of it was waiting to go.
  const TimeNs wire_start = f.wire_start_ns < 0 ? end_ns : std::min(f.wire_start_ns, end_ns);
  if (wire_start > f.posted_ns) a.push_back({ActivityKind::kQueueing, f.posted_ns, wire_start});
  if (end_ns > wire_start) a.push_back({ActivityKind::kWire, wire_start, end_ns});
}

const std::vector<TransferActivity>& TransferLedger::activities(uint64_t tag) const {
  static const std::vector<TransferActivity> kNone;
  auto it = accounts_.find(tag);
  return it == accounts_.end() ? kNone : it->second.activities;
}

uint64_t TransferLedger::control_messages(uint64_t tag) const {
  auto it = accounts_.find(tag);
  return it == accounts_.end() ? 0 : it->second.control_messages;
}

}  // namespace tensorwire::sim
