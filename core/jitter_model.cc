#include "core/jitter_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/assert.h"
#include "core/splitmix64.h"
#include "core/units_format.h"

namespace tensorwire {
namespace {

// Uniform in (0, 1): never 0, so its logarithm is finite.
double unit_interval(uint64_t& state) {
  return (static_cast<double>(splitmix64(state) >> 11) + 0.5) * 0x1.0p-53;
}

// A standard normal draw (Box-Muller, one of the pair: simpler state).
double standard_normal(uint64_t& state) {
  const double u1 = unit_interval(state);
  const double u2 = unit_interval(state);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double draw_ns(const JitterSpec& spec, uint64_t& state) {
  switch (spec.distribution) {
    case JitterDistribution::kNone: return 0;
    case JitterDistribution::kNormal:
      return static_cast<double>(spec.mean_ns) +
             static_cast<double>(spec.stddev_ns) * standard_normal(state);
    case JitterDistribution::kLognormal:
      return static_cast<double>(spec.median_ns) * std::exp(spec.sigma * standard_normal(state));
    case JitterDistribution::kUniform:
      return static_cast<double>(spec.min_ns) +
             static_cast<double>(spec.max_ns - spec.min_ns) * unit_interval(state);
    case JitterDistribution::kExponential:
      return -static_cast<double>(spec.mean_ns) * std::log(unit_interval(state));
  }
  TW_UNREACHABLE("a jitter distribution of unknown kind");
}

}  // namespace

const char* jitter_distribution_name(JitterDistribution distribution) {
  switch (distribution) {
    case JitterDistribution::kNone: return "none";
    case JitterDistribution::kNormal: return "normal";
    case JitterDistribution::kLognormal: return "lognormal";
    case JitterDistribution::kUniform: return "uniform";
    case JitterDistribution::kExponential: return "exponential";
  }
  TW_UNREACHABLE("a jitter distribution of unknown kind");
}

std::string JitterSpec::describe() const {
  const std::string name = jitter_distribution_name(distribution);
  switch (distribution) {
    case JitterDistribution::kNone: return name;
    case JitterDistribution::kNormal:
      return name + "(mean " + format_duration_ns(mean_ns) + ", stddev " +
             format_duration_ns(stddev_ns) + ")";
    case JitterDistribution::kLognormal: {
      std::string s = std::to_string(sigma);
      s.erase(s.find_last_not_of('0') + 1);  // "0.500000" -> "0.5"
      if (s.ends_with('.')) s.pop_back();
      return name + "(median " + format_duration_ns(median_ns) + ", sigma " + s + ")";
    }
    case JitterDistribution::kUniform:
      return name + "(" + format_duration_ns(min_ns) + " to " + format_duration_ns(max_ns) + ")";
    case JitterDistribution::kExponential:
      return name + "(mean " + format_duration_ns(mean_ns) + ")";
  }
  TW_UNREACHABLE("a jitter distribution of unknown kind");
}

std::string JitterModel::describe() const {
  std::string out;
  if (message_latency.enabled()) out += "message latency " + message_latency.describe();
  if (copy_engine.enabled()) {
    out += (out.empty() ? "" : ", ") + std::string("copy engine ") + copy_engine.describe();
  }
  return out.empty() ? "off" : out;
}

TimeNs draw_jitter_ns(const JitterSpec& spec, uint64_t& state) {
  if (!spec.enabled()) return 0;
  const double ns = draw_ns(spec, state);
  // NaN cannot come out of validated parameters; clamp keeps every draw a
  // delay a clock can add.
  TW_ASSERT_MSG(!std::isnan(ns), "a jitter draw is a number");
  return static_cast<TimeNs>(
      std::llround(std::clamp(ns, 0.0, static_cast<double>(JitterSpec::kMaxDrawNs))));
}

}  // namespace tensorwire
