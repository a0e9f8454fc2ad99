// Swarm testing: each seed of a fixed list draws its own configuration (ranks,
// tensors, memories, GPUDirect, steps, a meta-data change, whether a QP error
// is injected, the strategy) and the checker must find nothing in it. Varying
// the configuration per seed reaches corners one big configuration would not.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/splitmix64.h"
#include "model/explorer.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::model {
namespace {

class Draw {
 public:
  explicit Draw(uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t below(uint64_t n) { return splitmix64(state_) % n; }
  bool coin() { return below(2) == 1; }

 private:
  uint64_t state_;
};

struct SwarmCase {
  std::string toml;
  CheckOptions options;
};

SwarmCase draw_case(uint64_t seed) {
  Draw d(seed);
  const uint32_t ranks = 2 + static_cast<uint32_t>(d.below(3));
  const uint32_t gpus = static_cast<uint32_t>(d.below(3));
  const uint32_t tensors = 1 + static_cast<uint32_t>(d.below(4));
  const uint32_t steps = 1 + static_cast<uint32_t>(d.below(3));
  std::ostringstream t;
  t << "name = \"swarm" << seed << "\"\nseed = " << seed << "\n[cluster]\nnodes = " << ranks
    << "\ngpus_per_node = " << gpus << "\ngpu_direct = " << (d.coin() ? "true" : "false")
    << "\n[workload]\nkind = \"tensors\"\nsteps = " << steps << "\n";
  for (uint32_t i = 0; i < tensors; ++i) {
    const uint32_t src = static_cast<uint32_t>(d.below(ranks));
    const uint32_t dst = (src + 1 + static_cast<uint32_t>(d.below(ranks - 1))) % ranks;
    t << "[[workload.tensor]]\nname = \"t" << i << "\"\nsrc = " << src << "\ndst = " << dst
      << "\nshape = [" << d.below(40) << "]\n";
    if (gpus > 0 && d.coin()) t << "src_memory = \"gpu" << d.below(gpus) << "\"\n";
    if (gpus > 0 && d.coin()) t << "dst_memory = \"gpu" << d.below(gpus) << "\"\n";
    if (d.below(4) == 0) t << "dead = true\n";
  }
  if (steps > 1 && d.coin()) {
    t << "[[workload.change]]\nstep = " << 2 + d.below(steps - 1) << "\ntensor = \"t"
      << d.below(tensors) << "\"\nshape = [" << d.below(80) << "]\n";
  }
  SwarmCase c;
  c.toml = t.str();
  c.options.strategy = d.coin() ? CheckStrategy::kRandom : CheckStrategy::kPct;
  c.options.max_schedules = 50;
  c.options.seed = seed;
  switch (d.below(5)) {
    case 0: c.options.faults = {FaultKind::kQpError}; break;
    case 1: c.options.faults = {FaultKind::kRegistrationFailure}; break;
    case 2: c.options.faults = {FaultKind::kCrash}; break;
    default: break;
  }
  return c;
}

class Swarm : public ::testing::TestWithParam<uint64_t> {};

TEST_P(Swarm, ADrawnConfigurationHasNoViolation) {
  const SwarmCase c = draw_case(GetParam());
  Scenario s = load_scenario_string(c.toml, "swarm.toml");
  CheckReport r = check(s, c.options);
  EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound)
      << c.toml << "strategy " << check_strategy_name(c.options.strategy) << ", faults "
      << fault_list_text(c.options.faults) << "\n"
      << (r.counterexample && !r.counterexample->problems.empty() ? problem_line(r.counterexample->problems[0])
                                                                  : std::string());
  EXPECT_EQ(r.schedules, c.options.max_schedules);
}

INSTANTIATE_TEST_SUITE_P(FixedSeeds, Swarm, ::testing::Range<uint64_t>(1, 41));

}  // namespace
}  // namespace tensorwire::model
