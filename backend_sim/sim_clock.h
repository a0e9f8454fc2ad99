// A rank's clock: simulated time, timers as events on the one queue.
#pragma once

#include "backend_sim/sim_context.h"
#include "core/clock.h"

namespace tensorwire::sim {

class SimClock final : public Clock {
 public:
  // The event kinds of its timers: "timer" for one due now (the workload's
  // zero offsets, a protocol deferring work), "timeout" for one due later (a
  // request timeout: under the model checker, whose scenarios have no other
  // delays, the only timers of that kind), which `check --faults timeout`
  // may fire early (Simulator::fire_timeout_now).
  static constexpr const char* kTimerKind = "timer";
  static constexpr const char* kTimeoutKind = "timeout";

  SimClock(SimContext& context, uint32_t rank) : context_(context), rank_(rank) {}
  TimeNs now_ns() const override { return context_.now(); }
  TimerId schedule_after(TimeNs delay_ns, std::function<void()> callback) override;
  void cancel(TimerId timer) override;

 private:
  // A timer id holds its event's sequence in the low bits and its slot above:
  // 2^40 events in a run (over a day at ten million a second) and 2^24 event
  // slots in use at once (events pending, and cancelled ones not yet dropped
  // from the queue); past either, scheduling a timer stops the run with an
  // assertion naming the limit.
  static constexpr int kSequenceBits = 40;
  static TimerId timer_id(EventId id);

  SimContext& context_;
  uint32_t rank_;
};

}  // namespace tensorwire::sim
