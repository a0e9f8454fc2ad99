#include "backend_verbs/monotonic_clock.h"

#include <fstream>

namespace tensorwire::verbs {

MonotonicClock::MonotonicClock() : origin_(std::chrono::steady_clock::now()) {}

TimeNs MonotonicClock::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              origin_)
      .count();
}

TimerId MonotonicClock::schedule_after(TimeNs delay_ns, std::function<void()> callback) {
  const TimeNs due = now_ns() + (delay_ns > 0 ? delay_ns : 0);
  const uint64_t id = next_id_++;
  timers_.emplace(std::make_pair(due, id), std::move(callback));
  due_of_.emplace(id, due);
  return TimerId{id};
}

void MonotonicClock::cancel(TimerId timer) {
  auto it = due_of_.find(timer.value);
  if (it == due_of_.end()) return;
  timers_.erase(std::make_pair(it->second, it->first));
  due_of_.erase(it);
}

uint32_t MonotonicClock::fire_due() {
  uint32_t fired = 0;
  TimeNs now = now_ns();
  while (!timers_.empty() && timers_.begin()->first.first <= now) {
    auto node = timers_.extract(timers_.begin());
    due_of_.erase(node.key().second);
    // The timer is gone before it runs: a callback may schedule or cancel others.
    node.mapped()();
    ++fired;
    now = now_ns();
  }
  return fired;
}

TimeNs MonotonicClock::origin_on_monotonic_ns() const {
  // libstdc++'s steady_clock is CLOCK_MONOTONIC, counted from its own 0.
  return std::chrono::duration_cast<std::chrono::nanoseconds>(origin_.time_since_epoch()).count();
}

std::string MonotonicClock::domain() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!std::getline(in, id)) return "";
  return id;
}

std::optional<TimeNs> MonotonicClock::next_due_ns() const {
  if (timers_.empty()) return std::nullopt;
  return timers_.begin()->first.first;
}

}  // namespace tensorwire::verbs
