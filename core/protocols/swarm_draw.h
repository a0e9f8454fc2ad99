// The draws a protocol makes to build a swarm scenario (`tensorwire check
// --swarm`): whole numbers, coins and picks from a RapidCheck generator, so
// that a protocol folder writes its scenario generator as plain code and
// never includes RapidCheck itself. A draw is a pure function of (seed, size):
// the same pair gives the same scenario text on every machine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace tensorwire {

// Handed to a protocol's generator while RapidCheck runs it (swarm_scenario_text).
class SwarmDraw {
 public:
  // The size of this draw, 0 to kMaxSwarmSize: how large a scenario may get.
  virtual uint32_t size() const = 0;
  // A whole number in [lo, hi], uniform, whatever the size.
  virtual uint64_t between(uint64_t lo, uint64_t hi) = 0;
  // A whole number in [lo, lo + (hi - lo) * size / kMaxSwarmSize]: larger
  // draws reach further (RapidCheck's sized integers).
  virtual uint64_t up_to_sized(uint64_t lo, uint64_t hi) = 0;
  // True with probability 1 / n (n >= 1).
  bool one_in(uint64_t n) { return between(1, n) == 1; }
  // An index below n (n >= 1).
  size_t index_below(size_t n) { return static_cast<size_t>(between(0, n - 1)); }

 protected:
  ~SwarmDraw() = default;
};

// The largest size a swarm draw takes (RapidCheck's nominal size).
inline constexpr uint32_t kMaxSwarmSize = 100;

// Runs `generator` as a RapidCheck generator sampled with `seed` at `size`
// (clamped to kMaxSwarmSize) and returns the text it builds.
std::string swarm_scenario_text(uint64_t seed, uint32_t size,
                                const std::function<std::string(SwarmDraw&)>& generator);

}  // namespace tensorwire
