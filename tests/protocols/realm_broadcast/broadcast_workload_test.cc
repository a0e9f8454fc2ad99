// The [workload] kind = "broadcast" section: shipped files load, shorthands
// expand, and every bad value is an error naming file:line:column and the key.
#include <gtest/gtest.h>

#include <string>

#include "scenario/scenario_loader.h"
#include "tests/protocols/realm_broadcast/broadcast_fixture.h"
#include "tests/scenario/scenario_error_text.h"

namespace tensorwire {
namespace {

using collectives::BroadcastAlgorithm;
using collectives::MemoryId;

const std::string kRoot = TENSORWIRE_SOURCE_ROOT;

// Lines 1-8; tests append keys from line 9.
const std::string kHead = R"([cluster]
nodes = 3
gpus_per_node = 2
[workload]
kind = "broadcast"
bytes = "1MiB"
source = "node0/gpu1"
destinations = ["node1/gpu0", "node2/host", "node0/gpu1"]
)";

std::string error_of(const std::string& text) { return testing::scenario_error_of(text, "b.toml"); }

TEST(BroadcastWorkloadTable, ShippedBroadcastScenariosLoad) {
  Scenario big = load_scenario_file(kRoot + "/scenarios/broadcast_8x4.toml");
  ASSERT_TRUE(big.collective_workload.has_value());
  EXPECT_EQ(big.protocol.name, "realm_collective_broadcast");
  EXPECT_FALSE(big.description.empty());
  EXPECT_EQ(collectives::testing::broadcast_workload_of(big).bytes, 1ull << 30);
  EXPECT_EQ(collectives::testing::broadcast_workload_of(big).destinations.size(), 32u);
  EXPECT_EQ(collectives::testing::broadcast_workload_of(big).source, MemoryId::gpu_of(0, 0));
  EXPECT_FALSE(big.payload);
  Scenario mixed = load_scenario_file(kRoot + "/scenarios/broadcast_mixed.toml");
  ASSERT_TRUE(mixed.collective_workload.has_value());
  EXPECT_EQ(collectives::testing::broadcast_workload_of(mixed).destinations.size(), 12u);  // "all": 4 hosts + 8 GPUs
  EXPECT_EQ(collectives::testing::broadcast_workload_of(mixed).options.radix_intra, 1u);
  EXPECT_TRUE(mixed.payload);
}

TEST(BroadcastWorkloadTable, ExplicitListsDefaultsAndAlgorithmNames) {
  Scenario s = load_scenario_string(kHead, "b.toml");
  ASSERT_TRUE(s.collective_workload.has_value());
  const auto& w = collectives::testing::broadcast_workload_of(s);
  EXPECT_EQ(w.source, MemoryId::gpu_of(0, 1));
  ASSERT_EQ(w.destinations.size(), 3u);
  EXPECT_EQ(w.destinations[1], MemoryId::host(2));
  EXPECT_EQ(w.options.algorithm, BroadcastAlgorithm::kRadixTree);
  EXPECT_EQ(w.options.radix_inter, 2u);
  EXPECT_EQ(w.options.radix_intra, 2u);
  EXPECT_EQ(w.options.ib_buffer_max_bytes, 16u << 20);
  EXPECT_EQ(w.options.min_chunk_bytes, 4096u);
  EXPECT_TRUE(s.workload.steps.empty());
  EXPECT_EQ(collectives::testing::broadcast_workload_of(load_scenario_string(kHead + "algorithm = \"naive\"\n", "b.toml")).options.algorithm,
            BroadcastAlgorithm::kNaive);
  EXPECT_EQ(collectives::testing::broadcast_workload_of(load_scenario_string(kHead + "algorithm = 1\n", "b.toml")).options.algorithm,
            BroadcastAlgorithm::kAggregation);
  const std::string all_gpus = R"([cluster]
nodes = 3
gpus_per_node = 2
[workload]
kind = "broadcast"
bytes = 10
source = "node0/host"
destinations = "all_gpus"
)";
  EXPECT_EQ(collectives::testing::broadcast_workload_of(load_scenario_string(all_gpus, "b.toml")).destinations.size(), 6u);
}

TEST(BroadcastWorkloadTable, BadMemoriesNameTheElementAndWhy) {
  std::string base = kHead;
  base.replace(base.find("node2/host"), 10, "node7/host");
  std::string e = error_of(base);
  EXPECT_NE(e.find("b.toml:8:"), std::string::npos) << e;
  EXPECT_NE(e.find("workload.destinations[1]"), std::string::npos) << e;
  EXPECT_NE(e.find("nodes 0 to 2"), std::string::npos) << e;
  base = kHead;
  base.replace(base.find("node0/gpu1\"\n"), 10, "node0/gpu2");
  e = error_of(base);
  EXPECT_NE(e.find("b.toml:7:"), std::string::npos) << e;
  EXPECT_NE(e.find("workload.source"), std::string::npos) << e;
  EXPECT_NE(e.find("GPUs 0 to 1"), std::string::npos) << e;
  base = kHead;
  base.replace(base.find("node1/gpu0"), 10, "node1/tpu0");
  EXPECT_NE(error_of(base).find("\"host\" or \"gpuM\""), std::string::npos);
  base = kHead;
  const std::string list = "[\"node1/gpu0\", \"node2/host\", \"node0/gpu1\"]";
  base.replace(base.find(list), list.size(), "\"everything\"");
  EXPECT_NE(error_of(base).find("all_gpus"), std::string::npos) << error_of(base);
}

TEST(BroadcastWorkloadTable, BadOptionsNameTheKey) {
  std::string e = error_of(kHead + "algorithm = \"ring\"\n");
  EXPECT_NE(e.find("b.toml:9:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown algorithm 'ring'"), std::string::npos) << e;
  e = error_of(kHead + "algorithm = 4\n");
  EXPECT_NE(e.find("workload.algorithm"), std::string::npos) << e;
  e = error_of(kHead + "radix_inter = 0\n");
  EXPECT_NE(e.find("workload.radix_inter"), std::string::npos) << e;
  e = error_of(kHead + "max_chunk = \"1KiB\"\n");
  EXPECT_NE(e.find("b.toml:9:"), std::string::npos) << e;
  EXPECT_NE(e.find("max_chunk must be at least min_chunk"), std::string::npos) << e;
  e = error_of(kHead + "radix = 2\n");
  EXPECT_NE(e.find("unknown key"), std::string::npos) << e;
  e = error_of(kHead + "max_chunk = \"4GiB\"\n");
  EXPECT_NE(e.find("workload.max_chunk"), std::string::npos) << e;
}

TEST(BroadcastWorkloadTable, PayloadModeRefusesInstancesThatWouldNotFitInMemory) {
  std::string text = kHead;
  // node0 holds the source and one destination: 2 x 5 GiB.
  text.replace(text.find("\"1MiB\""), 6, "\"5GiB\"");
  const std::string e = error_of(text);
  EXPECT_NE(e.find("workload.bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("mode = \"timing\""), std::string::npos) << e;
  EXPECT_NO_THROW(load_scenario_string("[run]\nmode = \"timing\"\n" + text, "b.toml"));
}

TEST(BroadcastWorkloadTable, ProtocolAndWorkloadKindMustAgree) {
  std::string e = error_of("[protocol]\nname = \"tf_verbs_zero_copy\"\n" + kHead);
  EXPECT_NE(e.find("realm_collective_broadcast"), std::string::npos) << e;
  e = error_of(R"([protocol]
name = "realm_collective_broadcast"
[workload]
kind = "tensors"
[[workload.tensor]]
name = "a"
src = 0
dst = 1
)");
  EXPECT_NE(e.find("broadcast"), std::string::npos) << e;
}

}  // namespace
}  // namespace tensorwire
