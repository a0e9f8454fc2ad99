// Swarm scenarios (`tensorwire check --swarm`): the draws a protocol makes to
// write one (whole numbers, coins, picks), and the drawing, naming and
// shrinking of a protocol's scenario. Underneath, the protocol's
// ProtocolDescriptor::draw_swarm_scenario runs as a RapidCheck generator, so
// a protocol folder writes plain code and never includes RapidCheck, and a
// failing scenario shrinks the way RapidCheck shrinks a failing value. A draw
// is a pure function of (seed, size): the same pair gives the same text on
// every machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "core/protocols/protocol_descriptor.h"

namespace tensorwire {

// The largest size a swarm draw takes (RapidCheck's nominal size).
inline constexpr uint32_t kMaxSwarmSize = 100;

// Handed to a protocol's generator while RapidCheck runs it.
class SwarmDraw {
 public:
  // The size of this draw, 0 to kMaxSwarmSize: how large a scenario may get.
  virtual uint32_t size() const = 0;
  // A whole number in [lo, hi], uniform, whatever the size. Every draw
  // shrinks toward its lower bound.
  virtual uint64_t between(uint64_t lo, uint64_t hi) = 0;
  // A whole number in [lo, lo + (hi - lo) * size / kMaxSwarmSize]: larger
  // draws reach further (RapidCheck's sized integers).
  virtual uint64_t up_to_sized(uint64_t lo, uint64_t hi) = 0;
  // True with probability 1 / n (n >= 1); shrinks to false (a feature left out).
  bool one_in(uint64_t n) { return between(1, n) == n; }
  // An index below n (n >= 1); shrinks to 0, so put the plainest choice first.
  size_t index_below(size_t n) { return static_cast<size_t>(between(0, n - 1)); }

 protected:
  ~SwarmDraw() = default;
};

// `generator` run as a RapidCheck generator sampled with `seed` at `size`
// (clamped to kMaxSwarmSize): the text it builds.
std::string swarm_draw_text(uint64_t seed, uint32_t size,
                            const std::function<std::string(SwarmDraw&)>& generator);

// `protocol`'s scenario drawn from `seed` at `size`: a comment saying so, the
// name "swarm-<seed>", then the protocol's text. Empty when the protocol
// draws no swarm scenarios.
std::string draw_swarm_scenario(const ProtocolDescriptor& protocol, uint64_t seed, uint32_t size);

struct ShrunkSwarmScenario {
  std::string text;     // the smallest failing scenario found (the draw itself if none smaller)
  uint32_t steps = 0;   // smaller scenarios taken
  uint32_t tries = 0;   // candidates handed to still_fails
};

// Shrinks the scenario draw_swarm_scenario(protocol, seed, size) gives, for
// which `still_fails` holds, as RapidCheck shrinks: the first smaller draw
// (one pick moved toward its lower bound, so fewer ranks, tensors, steps,
// bytes, earlier choices) that still fails replaces it, until none does or
// `max_tries` candidates have been tried. Deterministic.
ShrunkSwarmScenario shrink_swarm_scenario(const ProtocolDescriptor& protocol, uint64_t seed,
                                          uint32_t size,
                                          const std::function<bool(const std::string&)>& still_fails,
                                          uint32_t max_tries);

}  // namespace tensorwire
