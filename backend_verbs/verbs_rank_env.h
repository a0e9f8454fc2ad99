// Everything one rank's protocol gets from the real machine (core/rank_env.h):
// the connected VerbsNic (behind a CountingNic), host memory, the monotonic
// clock and the host copy engine, and the one progress loop that drives them
// all. poll() is that loop's body: completions from the NIC, then due timers,
// then finished copies, each handler running on the caller's thread.
#pragma once

#include <chrono>
#include <cstdint>

#include "backend_verbs/counting_nic.h"
#include "backend_verbs/verbs_copy_engine.h"
#include "backend_verbs/verbs_memory_space.h"
#include "backend_verbs/monotonic_clock.h"
#include "backend_verbs/verbs_nic.h"
#include "core/rank_env.h"
#include "core/trace_sink.h"

namespace tensorwire::verbs {

class VerbsRankEnv {
 public:
  // Neither is owned; both outlive this.
  VerbsRankEnv(VerbsNic& nic, TraceSink& trace);
  VerbsRankEnv(const VerbsRankEnv&) = delete;
  VerbsRankEnv& operator=(const VerbsRankEnv&) = delete;

  RankEnv env() { return RankEnv{counting_nic_, clock_, copy_engine_, memory_, trace_}; }

  // One turn of the progress loop; how many events it handled (0: idle). An
  // error is the NIC's (a failed ibv_poll_cq, say): the rank cannot go on.
  Result<uint32_t> poll();

  // An idle progress loop's wait: asleep in the NIC's completion channel
  // (when it has one) for up to `longest`, but never past the next protocol
  // timer, and not at all while copies are in flight (they finish without a
  // completion event). Returns the events handled, 0 when nothing came;
  // false in *slept when it could not sleep there (the caller sleeps its own
  // way).
  Result<uint32_t> wait_idle(std::chrono::milliseconds longest, bool* slept);

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
};

}  // namespace tensorwire::verbs
