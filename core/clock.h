// Time as the protocols see it. Never the OS clock inside core/: simulated
// nanoseconds in the simulator, a monotonic clock on verbs.
#pragma once

#include <cstdint>
#include <functional>

namespace tensorwire {

using TimeNs = int64_t;

struct TimerId {
  uint64_t value = 0;
  friend bool operator==(TimerId, TimerId) = default;
};

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeNs now_ns() const = 0;
  // Run `callback` on the rank's progress loop after `delay_ns` (>= 0).
  virtual TimerId schedule_after(TimeNs delay_ns, std::function<void()> callback) = 0;
  // Cancelling a fired or unknown timer is a no-op.
  virtual void cancel(TimerId timer) = 0;
};

}  // namespace tensorwire
