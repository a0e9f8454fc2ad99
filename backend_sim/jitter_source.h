// The simulator's draws for the cluster's jitter model (core/jitter_model.h):
// one splitmix64 stream per noise source, both seeded from the run's seed, so
// a run stays a pure function of (scenario, seed, schedule) and turning on
// copy noise does not shift the message-latency draws. With jitter off no
// stream is ever advanced.
#pragma once

#include <cstdint>

#include "core/jitter_model.h"
#include "core/state_digest.h"

namespace tensorwire::sim {

class JitterSource {
 public:
  JitterSource(const JitterModel& model, uint64_t seed)
      : model_(model), message_state_(seed ^ 0x6a69747465726d73ull),  // "jitterms"
        copy_state_(seed ^ 0x6a69747465726365ull) {}                  // "jitterce"

  bool enabled() const { return model_.enabled(); }
  // Extra one-way latency for the next message put on the wire.
  TimeNs message_ns() { return draw_jitter_ns(model_.message_latency, message_state_); }
  // Extra time for the next copy-engine copy.
  TimeNs copy_ns() { return draw_jitter_ns(model_.copy_engine, copy_state_); }
  // The streams' positions: the next draws depend on them.
  void digest(StateDigest& d) const {
    if (enabled()) d.add(message_state_).add(copy_state_);
  }

 private:
  JitterModel model_;
  uint64_t message_state_;
  uint64_t copy_state_;
};

}  // namespace tensorwire::sim
