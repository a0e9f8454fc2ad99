// [cluster] topology and its keys: what each topology reads, and every
// mistake named with file:line, the key and what is wrong.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "scenario/scenario_loader.h"
#include "tests/scenario/scenario_error_text.h"

namespace tensorwire {
namespace {

// Line 1-3 the cluster's head; the test's keys from line 4; then a valid workload.
std::string scenario(const std::string& topology_keys) {
  return "[cluster]\nnodes = 8\ngpus_per_node = 4\n" + topology_keys +
         "[workload]\nkind = \"tensors\"\nsteps = 1\n[[workload.tensor]]\nname = \"a\"\n"
         "src = 0\ndst = 5\n";
}

void expect_error(const std::string& keys, std::initializer_list<std::string> parts) {
  const std::string e = testing::scenario_error_of(scenario(keys), "t.toml");
  for (const std::string& part : parts) {
    EXPECT_NE(e.find(part), std::string::npos) << "missing \"" << part << "\" in: " << e;
  }
}

TEST(TopologyKeys, StarIsTheDefault) {
  const Scenario s = load_scenario_string(scenario(""), "t.toml");
  EXPECT_EQ(s.cluster.topology.kind, TopologyKind::kStar);
  const Scenario named = load_scenario_string(scenario("topology = \"star\"\n"), "t.toml");
  EXPECT_EQ(named.cluster.topology.kind, TopologyKind::kStar);
}

TEST(TopologyKeys, LeafSpineReadsItsShape) {
  const Scenario s = load_scenario_string(
      scenario("topology = \"leaf_spine\"\nleaf_nodes = 4\nspines = 2\noversubscription = 2.5\n"
               "link_latency = \"300ns\"\n"),
      "t.toml");
  const ClusterTopology& t = s.cluster.topology;
  EXPECT_EQ(t.kind, TopologyKind::kLeafSpine);
  EXPECT_EQ(t.leaf_nodes, 4u);
  EXPECT_EQ(t.spines, 2u);
  EXPECT_DOUBLE_EQ(t.oversubscription, 2.5);
  EXPECT_EQ(t.link_latency_ns, 300);
  // An integer ratio, and the defaults: non-blocking, no link latency.
  const Scenario d = load_scenario_string(
      scenario("topology = \"leaf_spine\"\nleaf_nodes = 2\nspines = 1\noversubscription = 4\n"),
      "t.toml");
  EXPECT_DOUBLE_EQ(d.cluster.topology.oversubscription, 4.0);
  EXPECT_EQ(d.cluster.topology.link_latency_ns, 0);
}

TEST(TopologyKeys, RailHasOneNicPerGpuUnlessToldOtherwise) {
  const Scenario s = load_scenario_string(scenario("topology = \"rail\"\n"), "t.toml");
  EXPECT_EQ(s.cluster.topology.kind, TopologyKind::kRail);
  EXPECT_EQ(s.cluster.topology.rails, 4u);
  const Scenario two = load_scenario_string(scenario("topology = \"rail\"\nrails = 2\n"), "t.toml");
  EXPECT_EQ(two.cluster.topology.rails, 2u);
}

TEST(TopologyKeys, AnUnknownTopologyIsNamedWithTheChoices) {
  expect_error("topology = \"fat_tree\"\n",
               {"t.toml:4:", "cluster.topology", "unknown topology 'fat_tree'", "\"leaf_spine\""});
  expect_error("topology = 3\n", {"t.toml:4:", "cluster.topology"});
}

TEST(TopologyKeys, LeafNodesMustDivideTheNodes) {
  expect_error("topology = \"leaf_spine\"\nleaf_nodes = 3\nspines = 2\n",
               {"t.toml:5:", "cluster.leaf_nodes", "3 nodes per leaf do not divide", "8 nodes"});
  expect_error("topology = \"leaf_spine\"\nleaf_nodes = 0\nspines = 2\n",
               {"t.toml:5:", "cluster.leaf_nodes"});
  expect_error("topology = \"leaf_spine\"\nspines = 2\n", {"cluster", "leaf_nodes"});
}

TEST(TopologyKeys, ALeafSpineNeedsASpine) {
  expect_error("topology = \"leaf_spine\"\nleaf_nodes = 4\nspines = 0\n",
               {"t.toml:6:", "cluster.spines", "at least one spine"});
  expect_error("topology = \"leaf_spine\"\nleaf_nodes = 4\n", {"cluster", "spines"});
}

TEST(TopologyKeys, TheOversubscriptionIsARatioOfAtLeastOne) {
  const std::string head = "topology = \"leaf_spine\"\nleaf_nodes = 4\nspines = 2\n";
  expect_error(head + "oversubscription = 0.5\n",
               {"t.toml:7:", "cluster.oversubscription", "from 1 (non-blocking)"});
  expect_error(head + "oversubscription = 0\n", {"t.toml:7:", "cluster.oversubscription"});
  expect_error(head + "oversubscription = -2\n", {"t.toml:7:", "cluster.oversubscription"});
  expect_error(head + "oversubscription = nan\n", {"t.toml:7:", "cluster.oversubscription"});
  expect_error(head + "oversubscription = \"2:1\"\n",
               {"t.toml:7:", "cluster.oversubscription", "expected a number", "string"});
}

TEST(TopologyKeys, KeysOfAnotherTopologyAreMistakes) {
  expect_error("spines = 2\n",
               {"t.toml:4:", "cluster.spines", "topology = \"leaf_spine\"", "is \"star\""});
  expect_error("topology = \"rail\"\noversubscription = 2\n",
               {"t.toml:5:", "cluster.oversubscription", "is \"rail\""});
  expect_error("topology = \"leaf_spine\"\nleaf_nodes = 4\nspines = 2\nrails = 4\n",
               {"t.toml:7:", "cluster.rails", "topology = \"rail\"", "is \"leaf_spine\""});
}

TEST(TopologyKeys, ARailTopologyNeedsARail) {
  expect_error("topology = \"rail\"\nrails = 0\n", {"t.toml:5:", "cluster.rails", "at least one rail"});
  const std::string no_gpus =
      "[cluster]\nnodes = 4\ntopology = \"rail\"\n[workload]\nkind = \"tensors\"\nsteps = 1\n"
      "[[workload.tensor]]\nname = \"a\"\nsrc = 0\ndst = 1\n";
  const std::string e = testing::scenario_error_of(no_gpus, "t.toml");
  EXPECT_NE(e.find("t.toml:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("gpus_per_node"), std::string::npos) << e;
}

}  // namespace
}  // namespace tensorwire
