#include "core/protocols/swarm_draw.h"

#include <algorithm>

#include <rapidcheck.h>

#include "core/assert.h"

namespace tensorwire {
namespace {

// Each draw is a RapidCheck pick (operator* inside gen::exec), so the whole
// scenario is one generated value: its picks are recorded in order, and the
// same Random gives the same picks.
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

}  // namespace

std::string swarm_scenario_text(uint64_t seed, uint32_t size,
                                const std::function<std::string(SwarmDraw&)>& generator) {
  const uint32_t bounded = std::min(size, kMaxSwarmSize);
  const rc::Gen<std::string> gen = rc::gen::exec([&generator, bounded] {
    RapidCheckDraw draw(bounded);
    return generator(draw);
  });
  return gen(rc::Random(seed), static_cast<int>(bounded)).value();
}

}  // namespace tensorwire
