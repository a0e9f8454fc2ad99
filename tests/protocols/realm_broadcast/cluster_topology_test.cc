// ClusterTopology: the graph has the links the simulator models, and
// find_fastest_path routes the way a person reading the cluster would.
#include "core/protocols/realm_broadcast/cluster_topology.h"

#include <gtest/gtest.h>

namespace tensorwire::collectives {
namespace {

Cluster spec(uint32_t nodes, uint32_t gpus) {
  Cluster s;
  s.nodes = nodes;
  s.gpus_per_node = gpus;
  return s;
}

std::vector<MemoryId> memories_of(const MemoryPath& p, MemoryId src) {
  std::vector<MemoryId> out{src};
  for (const PathHop& h : p.hops) out.push_back(h.to);
  return out;
}

TEST(ClusterTopology, GpuDirectGpusTalkAcrossTheNetworkInOneHop) {
  ClusterTopology t(spec(2, 2));
  auto p = t.find_fastest_path(MemoryId::gpu_of(0, 1), MemoryId::gpu_of(1, 0), 1 << 20);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->hops.size(), 1u);
  EXPECT_TRUE(p->hops[0].network);
  ASSERT_EQ(p->hops[0].uses.size(), 2u);
  EXPECT_EQ(t.link_name(p->hops[0].uses[0].link), "node0/nic tx");
  EXPECT_EQ(t.link_name(p->hops[0].uses[1].link), "node1/nic rx");
  // latency + bytes / bandwidth: 1.5 us + 1 MiB at 12.5 GB/s.
  EXPECT_EQ(p->cost_ns, 1500 + static_cast<TimeNs>((1 << 20) * 1e9 / 12.5e9));
}

TEST(ClusterTopology, GpusWithoutGpuDirectStageThroughTheirHost) {
  Cluster s = spec(2, 2);
  s.gpu_direct = {{false, true}, {true, false}};
  ClusterTopology t(s);
  auto p = t.find_fastest_path(MemoryId::gpu_of(0, 0), MemoryId::gpu_of(1, 1), 4096);
  ASSERT_TRUE(p);
  const std::vector<MemoryId> want{MemoryId::gpu_of(0, 0), MemoryId::host(0), MemoryId::host(1),
                                   MemoryId::gpu_of(1, 1)};
  EXPECT_EQ(memories_of(*p, MemoryId::gpu_of(0, 0)), want);
  EXPECT_FALSE(p->hops[0].network);
  EXPECT_TRUE(p->hops[1].network);
  EXPECT_FALSE(p->hops[2].network);
  EXPECT_EQ(t.link_name(p->hops[0].uses.at(0).link), "node0/gpu0 copy engine");
  EXPECT_EQ(t.link_name(p->hops[2].uses.at(0).link), "node1/gpu1 copy engine");
  EXPECT_EQ(t.kind_of(MemoryId::gpu_of(0, 0)), MemoryKind::kDeviceNoGpuDirect);
  EXPECT_EQ(t.kind_of(MemoryId::gpu_of(0, 1)), MemoryKind::kDeviceGpuDirect);
}

TEST(ClusterTopology, PathsInsideANodeNeverLeaveIt) {
  // GPU to GPU without NVLink: through the host, even though a loop through the
  // NIC (GPUDirect both ends) would exist in the whole-cluster graph.
  ClusterTopology t(spec(3, 2));
  auto p = t.find_fastest_path(MemoryId::gpu_of(2, 0), MemoryId::gpu_of(2, 1), 64 << 20);
  ASSERT_TRUE(p);
  const std::vector<MemoryId> want{MemoryId::gpu_of(2, 0), MemoryId::host(2), MemoryId::gpu_of(2, 1)};
  EXPECT_EQ(memories_of(*p, MemoryId::gpu_of(2, 0)), want);
  for (const PathHop& h : p->hops) {
    EXPECT_FALSE(h.network);
    for (const auto& use : h.uses) EXPECT_EQ(t.link_name(use.link).rfind("node2/", 0), 0u);
  }
}

TEST(ClusterTopology, NvlinkConnectsGpusDirectly) {
  Cluster s = spec(1, 4);
  s.nvlink_bandwidth_bytes_per_s = 50e9;
  s.nvlink_latency_ns = 700;
  ClusterTopology t(s);
  auto p = t.find_fastest_path(MemoryId::gpu_of(0, 3), MemoryId::gpu_of(0, 1), 1 << 20);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->hops.size(), 1u);
  EXPECT_EQ(p->hops[0].latency_ns, 700);
  EXPECT_EQ(p->hops[0].uses.at(0).bandwidth_bytes_per_s, 50e9);
  EXPECT_EQ(t.link_name(p->hops[0].uses[0].link), "node0/gpu3 copy engine");
}

TEST(ClusterTopology, SameMemoryIsAnEmptyPathAndACopyOnItsEngine) {
  ClusterTopology t(spec(2, 1));
  auto p = t.find_fastest_path(MemoryId::host(1), MemoryId::host(1), 100);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->hops.empty());
  EXPECT_EQ(t.link_name(t.same_memory_hop(MemoryId::host(1)).uses.at(0).link), "node1/cpu memcpy");
  EXPECT_EQ(t.link_name(t.same_memory_hop(MemoryId::gpu_of(0, 0)).uses.at(0).link),
            "node0/gpu0 copy engine");
}

TEST(ClusterTopology, UnknownMemoriesHaveNoPath) {
  ClusterTopology t(spec(2, 1));
  EXPECT_FALSE(t.find_fastest_path(MemoryId::host(0), MemoryId::host(2), 1));
  EXPECT_FALSE(t.find_fastest_path(MemoryId::gpu_of(0, 1), MemoryId::host(1), 1));
  EXPECT_FALSE(t.contains(MemoryId::gpu_of(1, 1)));
}

TEST(ClusterTopology, GraphHasEveryMemoryNicAndTheSwitch) {
  ClusterTopology t(spec(4, 3));
  // Per node: host, 3 GPUs, NIC tx, NIC rx; plus one switch.
  EXPECT_EQ(t.vertex_count(), 4u * 6 + 1);
  EXPECT_EQ(t.link_count(), 4u * 6);
  EXPECT_GT(t.edge_count(), 0u);
}

}  // namespace
}  // namespace tensorwire::collectives
