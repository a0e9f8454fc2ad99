#include "core/transfer_breakdown.h"

#include <algorithm>
#include <array>

#include "core/assert.h"

namespace tensorwire {
namespace {

constexpr size_t kKinds = 4;

struct Edge {
  TimeNs at_ns;
  ActivityKind kind;
  int delta;  // +1: an activity starts, -1: one ends
};

// The part of `b` the highest-priority active kind (or none: other) owns.
TimeNs& part_of(TransferBreakdown& b, const std::array<uint32_t, kKinds>& active) {
  if (active[static_cast<size_t>(ActivityKind::kCopy)] > 0) return b.copies_ns;
  if (active[static_cast<size_t>(ActivityKind::kWire)] > 0) return b.wire_ns;
  if (active[static_cast<size_t>(ActivityKind::kControl)] > 0) return b.control_ns;
  if (active[static_cast<size_t>(ActivityKind::kQueueing)] > 0) return b.queueing_ns;
  return b.other_ns;
}

}  // namespace

TransferBreakdown& TransferBreakdown::operator+=(const TransferBreakdown& o) {
  control_messages += o.control_messages;
  control_ns += o.control_ns;
  queueing_ns += o.queueing_ns;
  wire_ns += o.wire_ns;
  copies_ns += o.copies_ns;
  other_ns += o.other_ns;
  return *this;
}

TransferBreakdown partition_transfer_time(std::vector<TransferActivity> activities, TimeNs from_ns,
                                          TimeNs to_ns, uint64_t control_messages) {
  TransferBreakdown b;
  b.control_messages = control_messages;
  if (to_ns <= from_ns) return b;
  std::vector<Edge> edges;
  edges.reserve(2 * activities.size());
  for (const TransferActivity& a : activities) {
    const TimeNs start = std::max(a.start_ns, from_ns);
    const TimeNs end = std::min(a.end_ns, to_ns);
    if (end <= start) continue;  // outside the wait, or empty
    edges.push_back({start, a.kind, +1});
    edges.push_back({end, a.kind, -1});
  }
  std::sort(edges.begin(), edges.end(),
            [](const Edge& x, const Edge& y) { return x.at_ns < y.at_ns; });
  std::array<uint32_t, kKinds> active{};
  TimeNs at = from_ns;
  for (const Edge& e : edges) {
    part_of(b, active) += e.at_ns - at;
    at = e.at_ns;
    uint32_t& count = active[static_cast<size_t>(e.kind)];
    TW_ASSERT_MSG(e.delta > 0 || count > 0, "an activity ends after it started");
    count = e.delta > 0 ? count + 1 : count - 1;
  }
  part_of(b, active) += to_ns - at;
  TW_ASSERT_MSG(b.total_ns() == to_ns - from_ns, "the parts partition the wait");
  return b;
}

}  // namespace tensorwire
