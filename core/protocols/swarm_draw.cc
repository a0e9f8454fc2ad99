#include "core/protocols/swarm_draw.h"

#include <algorithm>

#include <rapidcheck.h>

#include "core/assert.h"

namespace tensorwire {
namespace {

// Each draw is a RapidCheck pick (operator* inside gen::exec), so the whole
// scenario is one generated value: its picks are recorded in order, the same
// Random gives the same picks, and shrinking moves them one at a time.
class RapidCheckDraw final : public SwarmDraw {
 public:
  explicit RapidCheckDraw(uint32_t size) : size_(size) {}
  uint32_t size() const override { return size_; }

  uint64_t between(uint64_t lo, uint64_t hi) override {
    TW_ASSERT_MSG(lo <= hi && hi < UINT64_MAX, "an empty or unbounded range to draw from");
    // At the nominal size inRange covers its whole range: uniform.
    return *rc::gen::resize(static_cast<int>(kMaxSwarmSize), rc::gen::inRange(lo, hi + 1));
  }

  uint64_t up_to_sized(uint64_t lo, uint64_t hi) override {
    TW_ASSERT_MSG(lo <= hi && hi < UINT64_MAX, "an empty or unbounded range to draw from");
    const uint64_t value = *rc::gen::inRange(lo, hi + 1);
    TW_ASSERT(value >= lo && value <= hi);
    return value;
  }

 private:
  uint32_t size_;
};

rc::Gen<std::string> generator_of(const std::function<std::string(SwarmDraw&)>& generator,
                                  uint32_t size) {
  return rc::gen::exec([&generator, size] {
    RapidCheckDraw draw(size);
    return generator(draw);
  });
}

std::function<std::string(SwarmDraw&)> named(const ProtocolDescriptor& protocol, uint64_t seed,
                                             uint32_t size) {
  return [&protocol, seed, size](SwarmDraw& draw) {
    std::string text = protocol.draw_swarm_scenario(draw);
    if (text.empty()) return text;
    return "# Drawn by tensorwire check --swarm (protocol " + std::string(protocol.name()) +
           ", seed " + std::to_string(seed) + ", size " + std::to_string(size) + ").\nname = \"swarm-" +
           std::to_string(seed) + "\"\n" + text;
  };
}

}  // namespace

std::string swarm_draw_text(uint64_t seed, uint32_t size,
                            const std::function<std::string(SwarmDraw&)>& generator) {
  const uint32_t bounded = std::min(size, kMaxSwarmSize);
  return generator_of(generator, bounded)(rc::Random(seed), static_cast<int>(bounded)).value();
}

std::string draw_swarm_scenario(const ProtocolDescriptor& protocol, uint64_t seed, uint32_t size) {
  const uint32_t bounded = std::min(size, kMaxSwarmSize);
  return swarm_draw_text(seed, bounded, named(protocol, seed, bounded));
}

ShrunkSwarmScenario shrink_swarm_scenario(const ProtocolDescriptor& protocol, uint64_t seed,
                                          uint32_t size,
                                          const std::function<bool(const std::string&)>& still_fails,
                                          uint32_t max_tries) {
  const uint32_t bounded = std::min(size, kMaxSwarmSize);
  const std::function<std::string(SwarmDraw&)> generator = named(protocol, seed, bounded);
  rc::Shrinkable<std::string> current =
      generator_of(generator, bounded)(rc::Random(seed), static_cast<int>(bounded));
  ShrunkSwarmScenario shrunk;
  shrunk.text = current.value();
  bool smaller = true;
  while (smaller && shrunk.tries < max_tries) {
    smaller = false;
    rc::Seq<rc::Shrinkable<std::string>> candidates = current.shrinks();
    while (rc::Maybe<rc::Shrinkable<std::string>> next = candidates.next()) {
      if (shrunk.tries == max_tries) break;
      ++shrunk.tries;
      std::string text = next->value();
      if (!still_fails(text)) continue;
      current = std::move(*next);
      shrunk.text = std::move(text);
      ++shrunk.steps;
      smaller = true;
      break;
    }
  }
  TW_ASSERT(shrunk.tries <= max_tries);
  return shrunk;
}

}  // namespace tensorwire
