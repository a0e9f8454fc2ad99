// Swarm testing: each protocol draws small scenarios of its own
// (ProtocolDescriptor::draw_swarm_scenario, the generator `tensorwire check
// --swarm` uses). Every draw loads, the same seed draws the same text, the
// draws reach the features the generators promise, and the checker finds
// nothing in a drawn scenario of a correct protocol.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/protocols/protocol_registry.h"
#include "core/protocols/swarm_draw.h"
#include "model/explorer.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::model {
namespace {

constexpr uint64_t kDraws = 300;

uint32_t size_of_draw(uint64_t i) { return static_cast<uint32_t>(i % (kMaxSwarmSize + 1)); }

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(SwarmDraw, EveryProtocolDrawsScenariosThatLoadAsItsOwn) {
  for (const ProtocolDescriptor* p : registered_protocols()) {
    for (uint64_t i = 0; i < kDraws; ++i) {
      const std::string text = draw_swarm_scenario(*p, i, size_of_draw(i));
      ASSERT_FALSE(text.empty()) << p->name();
      Scenario s;
      ASSERT_NO_THROW(s = load_scenario_string(text, "swarm.toml")) << p->name() << "\n" << text;
      EXPECT_EQ(s.protocol.name, p->name()) << text;
    }
  }
}

// A draw that loads must also run: a broadcast whose IB pool cannot hold its
// plan's buffers is bad input, which `check --swarm` treats as the
// generator's bug (exit 70). One execution of each of many draws, as the
// swarm runs them.
TEST(SwarmDraw, EveryDrawRunsAsTheCheckerRunsIt) {
  NullTraceSink trace;
  for (const ProtocolDescriptor* p : registered_protocols()) {
    for (uint64_t i = 0; i < 3 * kDraws; ++i) {
      const std::string text = draw_swarm_scenario(*p, i * 7919 + 3, size_of_draw(i));
      const Scenario s = model_scenario(load_scenario_string(text, "swarm.toml"));
      RandomWalkStrategy walk(i);
      const Execution e = run_execution(s, 1, walk, trace);
      ASSERT_NE(e.outcome, CheckOutcome::kBadInput)
          << p->name() << "\n" << text << "\n" << (e.problems.empty() ? "" : e.problems.front().text);
    }
  }
}

TEST(SwarmDraw, TheSameSeedAndSizeDrawTheSameTextAndOtherSeedsOthers) {
  for (const ProtocolDescriptor* p : registered_protocols()) {
    std::set<std::string> distinct;
    for (uint64_t seed = 0; seed < 50; ++seed) {
      const std::string text = draw_swarm_scenario(*p, seed, 70);
      EXPECT_EQ(text, draw_swarm_scenario(*p, seed, 70)) << p->name() << " seed " << seed;
      distinct.insert(text);
    }
    EXPECT_EQ(distinct.size(), 50u) << p->name();
  }
}

// Size 0 is RapidCheck's smallest: sized draws stay at their lower bound.
TEST(SwarmDraw, SizedDrawsGrowWithTheSize) {
  const auto draw = [](uint64_t seed, uint32_t size) {
    return swarm_draw_text(seed, size, [](SwarmDraw& d) {
      return std::to_string(d.up_to_sized(2, 1000)) + " " + std::to_string(d.size());
    });
  };
  std::set<std::string> at_full;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_EQ(draw(seed, 0), "2 0");
    at_full.insert(draw(seed, 100));
  }
  EXPECT_GT(at_full.size(), 15u);
  EXPECT_EQ(draw(3, 500), draw(3, kMaxSwarmSize)) << "sizes above the largest are the largest";
}

// The features each generator promises (its header) show up in some draws.
TEST(SwarmDraw, TheDrawsReachEveryDeclaredFeature) {
  const std::map<std::string, std::vector<std::string>> features = {
      {"tf_verbs_zero_copy",
       {"dtype = \"string\"", "dst_memory = \"gpu", "src_memory = \"host_pageable\"",
        "gpu_direct = [", "gpu_direct = false", "dead = true", "shape = []", "shape = [0]",
        "[[workload.change]]", "\ndtype = \"string\"\n[[", "string_bytes = ", "send_offset",
        "order = \"send_first\"", "send_queue_depth", "control_ring_size", "request_timeout",
        "nodes = 4", "steps = 4", "channels = \"all\""}},
      {"oneflow_commnet",
       {"dst_memory = \"gpu", "src_memory = \"host_pageable\"", "gpu_direct = false",
        "gpu_direct = true", "dead = true", "shape = [0]", "[[workload.change]]",
        "order = \"send_first\"", "send_queue_depth", "eager_max_bytes = 0\n",
        "max_reads_in_flight = 3", "nodes = 4", "steps = 3", "channels = \"all\""}},
      {"mvapich2_gpu",
       {"dst_memory = \"gpu", "src_memory = \"gpu", "gpu_direct = false", "gpu_direct = true",
        "dead = true", "shape = [0]", "[[workload.change]]", "order = \"send_first\"",
        "send_queue_depth", "staging = \"naive\"", "staging = \"pipelined\"",
        "eager_max_bytes = 0\n", "vbuf_count = 1\n", "vbuf_count = 3", "nodes = 4", "steps = 3",
        "channels = \"all\""}},
      {"tf_verbs_legacy",
       {"dst_memory = \"gpu", "src_memory = \"host_pageable\"", "gpu_direct = false",
        "dead = true", "shape = [0]", "[[workload.change]]", "order = \"send_first\"",
        "send_queue_depth", "receives_per_peer = 8", "nodes = 4", "steps = 3", "channels = \"all\""}},
      {"realm_collective_broadcast",
       {"algorithm = \"naive\"", "algorithm = \"aggregation\"", "algorithm = \"radix_tree\"",
        "destinations = \"all", "gpu_direct = [[", "nvlink_bandwidth", "ib_pool_size",
        "radix_intra = 0", "bytes = 0\n", "nodes = 4", "source = \"node0/gpu"}}};
  for (const ProtocolDescriptor* p : registered_protocols()) {
    std::string all;
    for (uint64_t i = 0; i < kDraws; ++i) all += draw_swarm_scenario(*p, i, size_of_draw(i));
    ASSERT_TRUE(features.count(std::string(p->name()))) << p->name() << ": features not listed here";
    for (const std::string& f : features.at(std::string(p->name()))) {
      EXPECT_TRUE(contains(all, f)) << p->name() << " never draws " << f;
    }
  }
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Shrinking keeps what makes a scenario fail and drops the rest: asked to
// keep a string tensor, a large draw shrinks to a smaller one that still
// has it, deterministically; with everything failing it reaches the
// smallest draw of all.
TEST(SwarmShrink, ADrawShrinksToASmallerOneThatStillFails) {
  const ProtocolDescriptor& p = protocol_named("tf_verbs_zero_copy");
  const auto has_string = [](const std::string& text) {
    return contains(text, "dtype = \"string\"");
  };
  uint64_t seed = 0;
  std::string drawn;
  for (; seed < 100; ++seed) {
    drawn = draw_swarm_scenario(p, seed, kMaxSwarmSize);
    if (has_string(drawn) && count_of(drawn, "[[workload.tensor]]") >= 3) break;
  }
  ASSERT_LT(seed, 100u) << "no draw with a string tensor among three or more";
  const ShrunkSwarmScenario shrunk = shrink_swarm_scenario(p, seed, kMaxSwarmSize, has_string, 500);
  EXPECT_TRUE(has_string(shrunk.text)) << shrunk.text;
  EXPECT_GT(shrunk.steps, 0u);
  EXPECT_LE(shrunk.tries, 500u);
  EXPECT_LT(count_of(shrunk.text, "[[workload.tensor]]"), count_of(drawn, "[[workload.tensor]]"))
      << shrunk.text;
  EXPECT_NO_THROW(load_scenario_string(shrunk.text, "shrunk.toml")) << shrunk.text;
  EXPECT_EQ(shrink_swarm_scenario(p, seed, kMaxSwarmSize, has_string, 500).text, shrunk.text);

  const ShrunkSwarmScenario smallest =
      shrink_swarm_scenario(p, seed, kMaxSwarmSize, [](const std::string&) { return true; }, 10000);
  const Scenario s = load_scenario_string(smallest.text, "smallest.toml");
  EXPECT_EQ(s.cluster.nodes, 2u) << smallest.text;
  EXPECT_EQ(count_of(smallest.text, "[[workload.tensor]]"), 1u) << smallest.text;
  EXPECT_FALSE(contains(smallest.text, "[[workload.change]]")) << smallest.text;
  EXPECT_TRUE(contains(smallest.text, "steps = 1\n")) << smallest.text;
}

TEST(SwarmShrink, ADrawNothingSmallerFailsStaysAsDrawnWithinTheBudget) {
  const ProtocolDescriptor& p = protocol_named("realm_collective_broadcast");
  const std::string drawn = draw_swarm_scenario(p, 9, 80);
  const ShrunkSwarmScenario same =
      shrink_swarm_scenario(p, 9, 80, [&drawn](const std::string& text) { return text == drawn; }, 30);
  EXPECT_EQ(same.text, drawn);
  EXPECT_EQ(same.steps, 0u);
  EXPECT_GT(same.tries, 0u);
  EXPECT_LE(same.tries, 30u);
}

struct SwarmCase {
  std::string protocol;
  uint64_t seed;
};

class Swarm : public ::testing::TestWithParam<SwarmCase> {};

// The checker finds nothing in a drawn scenario of a correct protocol, with
// the strategy and faults the seed picks.
TEST_P(Swarm, ADrawnScenarioHasNoViolation) {
  const SwarmCase& c = GetParam();
  const std::string text =
      draw_swarm_scenario(protocol_named(c.protocol), c.seed, size_of_draw(c.seed * 7));
  Scenario s = load_scenario_string(text, "swarm.toml");
  CheckOptions o;
  o.strategy = c.seed % 2 == 0 ? CheckStrategy::kRandom : CheckStrategy::kPct;
  o.max_schedules = 40;
  o.seed = s.seed;
  // Three seeds in five inject a fault, on either protocol (the broadcast
  // passes a rank's failure on with ABORT: no rank is left waiting).
  switch (c.seed % 5) {
    case 0: o.faults = {FaultKind::kQpError}; break;
    case 1: o.faults = {FaultKind::kRegistrationFailure}; break;
    case 2: o.faults = {FaultKind::kCrash}; break;
    default: break;
  }
  CheckReport r = check(s, o);
  EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound)
      << text << "strategy " << check_strategy_name(o.strategy) << ", faults "
      << fault_list_text(o.faults) << "\n"
      << (r.counterexample && !r.counterexample->problems.empty()
              ? problem_line(r.counterexample->problems[0])
              : std::string());
  EXPECT_EQ(r.schedules, o.max_schedules);
}

std::vector<SwarmCase> swarm_cases() {
  std::vector<SwarmCase> cases;
  for (uint64_t seed = 1; seed <= 60; ++seed) cases.push_back({"tf_verbs_zero_copy", seed});
  for (uint64_t seed = 1; seed <= 20; ++seed) cases.push_back({"realm_collective_broadcast", seed});
  for (uint64_t seed = 1; seed <= 20; ++seed) cases.push_back({"oneflow_commnet", seed});
  for (uint64_t seed = 1; seed <= 20; ++seed) cases.push_back({"mvapich2_gpu", seed});
  for (uint64_t seed = 1; seed <= 20; ++seed) cases.push_back({"tf_verbs_legacy", seed});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(DrawnScenarios, Swarm, ::testing::ValuesIn(swarm_cases()),
                         [](const auto& info) {
                           const char first = info.param.protocol[0];
                           if (info.param.protocol == "tf_verbs_legacy") {
                             return "tf_legacy_" + std::to_string(info.param.seed);
                           }
                           return std::string(first == 't'   ? "tf_verbs_"
                                              : first == 'o' ? "oneflow_"
                                              : first == 'm' ? "mvapich2_"
                                                             : "broadcast_") +
                                  std::to_string(info.param.seed);
                         });

}  // namespace
}  // namespace tensorwire::model
