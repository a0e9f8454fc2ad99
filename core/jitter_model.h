// Optional noise on the cluster's costs, so that runs over different seeds
// give a distribution instead of one number: an extra delay on each message's
// one-way latency and on each copy-engine copy, drawn from a named
// distribution. Off unless the scenario's [cluster.jitter] asks for it, so a
// run without it is exactly what it was before jitter existed. The draws come
// from the run's seed (the simulator's generator); the distributions are our
// own code, because the standard library's differ between implementations.
#pragma once

#include <cstdint>
#include <string>

#include "core/clock.h"

namespace tensorwire {

enum class JitterDistribution : uint8_t { kNone, kNormal, kLognormal, kUniform, kExponential };

// "none", "normal", "lognormal", "uniform", "exponential".
const char* jitter_distribution_name(JitterDistribution distribution);

// One noise source. Every draw is an extra delay of at least 0 ns (a normal
// draw below zero adds nothing) and at most kMaxDrawNs.
struct JitterSpec {
  static constexpr TimeNs kMaxDrawNs = 1'000'000'000;  // 1 s: no draw overflows a clock

  JitterDistribution distribution = JitterDistribution::kNone;
  TimeNs mean_ns = 0;    // normal, exponential
  TimeNs stddev_ns = 0;  // normal
  TimeNs median_ns = 0;  // lognormal: exp(mu)
  double sigma = 0;      // lognormal: the log's standard deviation
  TimeNs min_ns = 0;     // uniform
  TimeNs max_ns = 0;     // uniform

  bool enabled() const { return distribution != JitterDistribution::kNone; }
  // "lognormal(median 200 ns, sigma 0.5)".
  std::string describe() const;
};

struct JitterModel {
  JitterSpec message_latency;  // added to each message's one-way latency
  JitterSpec copy_engine;      // added to each copy-engine copy's duration

  bool enabled() const { return message_latency.enabled() || copy_engine.enabled(); }
  // "message latency lognormal(...), copy engine normal(...)"; "off" when off.
  std::string describe() const;
};

// One draw from `spec`, advancing `state` (a splitmix64 stream); 0 when the
// spec is off (and then `state` is left alone).
TimeNs draw_jitter_ns(const JitterSpec& spec, uint64_t& state);

}  // namespace tensorwire
