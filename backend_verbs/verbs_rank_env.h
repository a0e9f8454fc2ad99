// Everything one rank's protocol gets from the real machine (core/rank_env.h):
// the connected VerbsNic (behind a CountingNic), host memory, the monotonic
// clock and the host copy engine, and the one progress loop that drives them
// all. poll() is that loop's body: completions from the NIC, then due timers,
// then finished copies, each handler running on the caller's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>

#include "core/counting_nic.h"
#include "backend_verbs/verbs_copy_engine.h"
#include "backend_verbs/verbs_memory_space.h"
#include "backend_verbs/monotonic_clock.h"
#include "core/tracing_nic.h"
#include "backend_verbs/verbs_nic.h"
#include "core/rank_env.h"
#include "core/trace_sink.h"

namespace tensorwire::verbs {

class VerbsRankEnv {
 public:
  // Neither is owned; both outlive this. With `trace_nic`, every work
  // request and registration is told to `trace` too (tracing_nic.h); the
  // protocol's own instants go there either way.
  VerbsRankEnv(VerbsNic& nic, TraceSink& trace, bool trace_nic = false);
  VerbsRankEnv(const VerbsRankEnv&) = delete;
  VerbsRankEnv& operator=(const VerbsRankEnv&) = delete;

  RankEnv env() {
    Nic& nic = tracing_nic_ ? static_cast<Nic&>(*tracing_nic_) : counting_nic_;
    return RankEnv{nic, clock_, copy_engine_, memory_, trace_};
  }

  // One turn of the progress loop; how many events it handled (0: idle). An
  // error is the NIC's (a failed ibv_poll_cq, say): the rank cannot go on.
  Result<uint32_t> poll();

  // An idle progress loop's wait: asleep in the NIC's completion channel
  // (when it has one) for up to `longest`, but never past the next protocol
  // timer, and not at all while copies are in flight (they finish without a
  // completion event). Returns the events handled, 0 when nothing came;
  // false in *slept when it could not sleep there (the caller sleeps its own
  // way). It also ends when one of `also_wake_on` becomes readable (the
  // coordinator's sockets while a phase barrier is pending).
  Result<uint32_t> wait_idle(std::chrono::milliseconds longest, bool* slept,
                             std::span<const int> also_wake_on = {});

  VerbsNic& nic() { return nic_; }
  MonotonicClock& clock() { return clock_; }
  VerbsMemorySpace& memory() { return memory_; }
  const TransportCounters& transport() const { return counting_nic_.counters(); }
  const CopyEngineCounters& copies() const { return copy_engine_.counters(); }

 private:
  VerbsNic& nic_;
  TraceSink& trace_;
  CountingNic counting_nic_;
  MonotonicClock clock_;
  VerbsMemorySpace memory_;
  VerbsCopyEngine copy_engine_;
  std::optional<TracingNic> tracing_nic_;  // over counting_nic_, when tracing
};

}  // namespace tensorwire::verbs
