// Where one tensor transfer's time went: its Recv's wait [recv_called, done]
// split into copies, wire, control round trips, queueing and other, from the
// intervals a measuring backend recorded for the transfer (its activities).
// At each instant the highest-priority activity active owns it
// (copies > wire > control > queueing); an instant with none is "other"
// (waiting for the peer, the application, compute). The parts partition the
// wait, so they sum to latency_ns exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "core/clock.h"

namespace tensorwire {

// In priority order, lowest first.
enum class ActivityKind : uint8_t { kQueueing = 0, kControl = 1, kWire = 2, kCopy = 3 };

struct TransferActivity {
  ActivityKind kind = ActivityKind::kQueueing;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;  // exclusive
};

struct TransferBreakdown {
  uint64_t control_messages = 0;  // control messages tagged to the transfer
  TimeNs control_ns = 0;
  TimeNs queueing_ns = 0;
  TimeNs wire_ns = 0;
  TimeNs copies_ns = 0;
  TimeNs other_ns = 0;

  TimeNs total_ns() const { return control_ns + queueing_ns + wire_ns + copies_ns + other_ns; }
  TransferBreakdown& operator+=(const TransferBreakdown& o);
};

// Splits [from_ns, to_ns) among `activities` (clipped to it) by priority.
// An empty or reversed window gives all zeros.
TransferBreakdown partition_transfer_time(std::vector<TransferActivity> activities, TimeNs from_ns,
                                          TimeNs to_ns, uint64_t control_messages);

}  // namespace tensorwire
