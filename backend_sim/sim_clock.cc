#include "backend_sim/sim_clock.h"

#include <memory>
#include <utility>

#include "core/assert.h"

namespace tensorwire::sim {

TimerId SimClock::schedule_after(TimeNs delay_ns, std::function<void()> callback) {
  // The event learns its own id after scheduling, so that it can drop its
  // entry in timers_ when it fires (the table stays as small as the pending set).
  auto self_id = std::make_shared<uint64_t>(0);
  // A timer set while a transfer is current fires working for it (a retry,
  // a timeout); wrapped only then, so untagged timers cost nothing more.
  if (const uint64_t tag = context_.transfer_tag; tag != 0) {
    callback = [this, tag, inner = std::move(callback)] {
      const uint64_t outer = std::exchange(context_.transfer_tag, tag);
      inner();
      context_.transfer_tag = outer;
    };
  }
  EventId id = context_.events.schedule_after(
      delay_ns, rank_, delay_ns > 0 ? kTimeoutKind : kTimerKind, [this, self_id, callback = std::move(callback)] {
        timers_.erase(*self_id);
        if (context_.crashed[rank_]) return;
        callback();
      });
  *self_id = id.sequence;
  const bool fresh = timers_.emplace(id.sequence, id).second;
  TW_ASSERT_MSG(fresh, "event sequence numbers are unique");
  return TimerId{id.sequence};
}

void SimClock::cancel(TimerId timer) {
  auto it = timers_.find(timer.value);
  if (it == timers_.end()) return;
  context_.events.cancel(it->second);
  timers_.erase(it);
}

}  // namespace tensorwire::sim
