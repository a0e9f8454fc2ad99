// The Clock of a rank on a real machine: CLOCK_MONOTONIC (std::chrono's
// steady_clock), in nanoseconds since the clock was made, so the times in a
// run's results start near 0 as the simulator's do. Timers are kept here and
// fired by the rank's progress loop (fire_due), never from a signal or a
// thread, so their callbacks run where every other event of the rank runs.
// Not thread-safe: the rank's progress loop owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/clock.h"

namespace tensorwire::verbs {

class MonotonicClock final : public Clock {
 public:
  MonotonicClock();

  TimeNs now_ns() const override;
  TimerId schedule_after(TimeNs delay_ns, std::function<void()> callback) override;
  void cancel(TimerId timer) override;

  // Runs every timer due by now, earliest first (ties in the order they were
  // scheduled); a timer scheduled by a callback for a time already past runs
  // in the same call. Returns how many ran.
  uint32_t fire_due();
  // When the earliest pending timer is due; nullopt when none is.
  std::optional<TimeNs> next_due_ns() const;
  size_t pending() const { return timers_.size(); }

  // Where this clock's 0 lies on CLOCK_MONOTONIC, and the clock domain it
  // shares with every other process of this boot of this host (the kernel's
  // boot id; empty where it cannot be read). Two ranks in one domain can put
  // their times on one line exactly; ranks of different hosts cannot.
  TimeNs origin_on_monotonic_ns() const;
  static std::string domain();

 private:
  std::chrono::steady_clock::time_point origin_;
  uint64_t next_id_ = 1;
  // (due, id): ids grow, so equal due times keep scheduling order.
  std::map<std::pair<TimeNs, uint64_t>, std::function<void()>> timers_;
  std::map<uint64_t, TimeNs> due_of_;
};

}  // namespace tensorwire::verbs
