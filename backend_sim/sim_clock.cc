#include "backend_sim/sim_clock.h"

#include <memory>
#include <utility>

#include "core/assert.h"

namespace tensorwire::sim {

TimerId SimClock::schedule_after(TimeNs delay_ns, std::function<void()> callback) {
  // A timer set while a transfer is current fires working for it (a retry,
  // a timeout). The tag rides in the event itself, which holds the callback
  // inline: a timer costs no allocation beyond the caller's std::function.
  const uint64_t tag = context_.transfer_tag;
  const EventId id = context_.events.schedule_after(
      delay_ns, rank_, delay_ns > 0 ? kTimeoutKind : kTimerKind,
      [this, tag, callback = std::move(callback)] {
        if (context_.crashed[rank_]) return;
        if (tag == 0) {
          callback();
          return;
        }
        const uint64_t outer = std::exchange(context_.transfer_tag, tag);
        callback();
        context_.transfer_tag = outer;
      });
  return timer_id(id);
}

// The timer's id is its event's id, packed: cancelling needs no table, and a
// timer that fired (or was cancelled) has a slot whose sequence moved on, so
// cancelling it again is a no-op.
TimerId SimClock::timer_id(EventId id) {
  TW_ASSERT_MSG(id.sequence < (uint64_t{1} << kSequenceBits),
                "a timer's id holds its event's sequence: at most 2^40 events in a run");
  TW_ASSERT_MSG(id.slot < (uint64_t{1} << (64 - kSequenceBits)),
                "a timer's id holds its event's slot: at most 2^24 event slots in use at once");
  return TimerId{(uint64_t{id.slot} << kSequenceBits) | id.sequence};
}

void SimClock::cancel(TimerId timer) {
  if (timer.value == 0) return;
  const EventId id{static_cast<uint32_t>(timer.value >> kSequenceBits),
                   timer.value & ((uint64_t{1} << kSequenceBits) - 1)};
  context_.events.cancel(id);
}

}  // namespace tensorwire::sim
