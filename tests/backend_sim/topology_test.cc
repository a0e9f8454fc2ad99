// Topologies beyond one switch against hand-computed transfer times: flows
// share every link of their route max-min (an oversubscribed spine halves
// two flows crossing it; capacity a spine-bound flow cannot use goes to its
// NIC's other flow), rails do not interfere, ECMP spreads pairs over spines
// deterministically, and a message between leaves pays two link latencies.
//
// Numbers: NICs at 1 GB/s, so 1 MB takes 1 ms alone; registration is free so
// every write starts at 0. A write's sender completes at drain + 2 latencies
// (the bytes land one latency after they drain, the acknowledgement takes one).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "backend_sim/fabric.h"
#include "backend_sim/fabric_dot.h"
#include "core/resource_usage.h"
#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

constexpr uint32_t kMB = 1000000;
constexpr TimeNs kNicLatencyNs = 1000;
constexpr TimeNs kLinkLatencyNs = 100;
const Access kRw = Access::kLocalWrite | Access::kRemoteWrite;

Cluster base(uint32_t nodes) {
  Cluster c;
  c.nodes = nodes;
  c.nic_bandwidth_bytes_per_s = 1e9;
  c.nic_latency_ns = kNicLatencyNs;
  c.registration_base_ns = 0;
  c.registration_per_page_ns = 0;
  return c;
}

Cluster leaf_spine(uint32_t nodes, uint32_t leaf_nodes, uint32_t spines, double ratio) {
  Cluster c = base(nodes);
  c.topology.kind = TopologyKind::kLeafSpine;
  c.topology.leaf_nodes = leaf_nodes;
  c.topology.spines = spines;
  c.topology.oversubscription = ratio;
  c.topology.link_latency_ns = kLinkLatencyNs;
  return c;
}

Cluster rail(uint32_t nodes, uint32_t rails) {
  Cluster c = base(nodes);
  c.gpus_per_node = rails;
  c.topology.kind = TopologyKind::kRail;
  c.topology.rails = rails;
  return c;
}

struct Pair {
  uint32_t src;
  uint32_t dst;
};

// Writes `bytes` from src to dst for every pair at once; returns each
// sender's completion time, in pair order.
std::vector<TimeNs> write_all(const Cluster& cluster, const std::vector<Pair>& pairs,
                              uint32_t bytes = kMB,
                              std::vector<ResourceUsage>* usage = nullptr) {
  SimFixture f(cluster, /*payload=*/false);
  for (size_t i = 0; i < pairs.size(); ++i) {
    MemoryRegion src = f.region(pairs[i].src, bytes, Access::kNone);
    MemoryRegion dst = f.region(pairs[i].dst, bytes, kRw);
    EXPECT_TRUE(f.write(pairs[i].src, pairs[i].dst, src, dst, bytes, 100 + i).is_ok());
  }
  f.sim().run();
  std::vector<TimeNs> done;
  for (size_t i = 0; i < pairs.size(); ++i) {
    for (const Recorded& r : f.completions(pairs[i].src)) {
      if (r.completion.wr_id == 100 + i) done.push_back(r.at_ns);
    }
  }
  EXPECT_EQ(done.size(), pairs.size()) << "every write completes once";
  if (usage != nullptr) *usage = f.sim().resource_usage();
  return done;
}

constexpr TimeNs kIntraLeafNs = 2 * kNicLatencyNs;
constexpr TimeNs kCrossLeafNs = 2 * (kNicLatencyNs + 2 * kLinkLatencyNs);

TEST(Topology, TwoFlowsCrossingATwoToOneOversubscribedSpineGetHalfEach) {
  // Leaves of 2 nodes, one spine, 2:1: each leaf-spine link carries
  // 2 x 1 GB/s / 2 = 1 GB/s, shared by both flows: 0.5 GB/s each, 1 MB in 2 ms.
  const std::vector<TimeNs> done = write_all(leaf_spine(4, 2, 1, 2.0), {{0, 2}, {1, 3}});
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0], 2000000 + kCrossLeafNs);
  EXPECT_EQ(done[1], 2000000 + kCrossLeafNs);
  // Non-blocking (1:1), the same flows each have their NIC's whole 1 GB/s.
  const std::vector<TimeNs> free = write_all(leaf_spine(4, 2, 1, 1.0), {{0, 2}, {1, 3}});
  EXPECT_EQ(free, (std::vector<TimeNs>{1000000 + kCrossLeafNs, 1000000 + kCrossLeafNs}));
}

TEST(Topology, ASpineBoundFlowLeavesItsNicsRestToAFlowWithinTheLeaf) {
  // 4:1 with one spine: the uplink carries 0.5 GB/s, shared by the two flows
  // leaving leaf 0 (0.25 GB/s each, 1 MB in 4 ms); node 0's other flow stays
  // in its leaf and takes the 0.75 GB/s of its NIC the spine-bound flow cannot
  // use (max-min, not an equal split): 1 MB in 1,333,334 ns (rounded up).
  const std::vector<TimeNs> done = write_all(leaf_spine(4, 2, 1, 4.0), {{0, 2}, {1, 3}, {0, 1}});
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0], 4000000 + kCrossLeafNs);
  EXPECT_EQ(done[1], 4000000 + kCrossLeafNs);
  EXPECT_EQ(done[2], 1333334 + kIntraLeafNs);
}

TEST(Topology, AMessageBetweenLeavesPaysTwoLinkLatencies) {
  const Cluster c = leaf_spine(4, 2, 2, 1.0);
  const Fabric fabric(c);
  EXPECT_EQ(fabric.latency_ns(0, 1), kNicLatencyNs);
  EXPECT_EQ(fabric.latency_ns(0, 3), kNicLatencyNs + 2 * kLinkLatencyNs);
  EXPECT_EQ(fabric.latency_ns(3, 0), fabric.latency_ns(0, 3));
  // 1,000 bytes in 1,000 ns at 1 GB/s, then the latencies.
  EXPECT_EQ(write_all(c, {{0, 1}}, 1000), std::vector<TimeNs>{1000 + kIntraLeafNs});
  EXPECT_EQ(write_all(c, {{0, 3}}, 1000), std::vector<TimeNs>{1000 + kCrossLeafNs});
}

TEST(Topology, EcmpSpreadsPairsOverSpinesTheSameWayEveryTime) {
  const Cluster c = leaf_spine(64, 8, 4, 1.0);
  const Fabric a(c);
  const Fabric b(c);
  std::map<uint32_t, uint32_t> per_spine;
  uint32_t pairs = 0;
  for (uint32_t s = 0; s < c.nodes; ++s) {
    for (uint32_t d = 0; d < c.nodes; ++d) {
      if (s == d || a.leaf_of(s) == a.leaf_of(d)) continue;
      const uint32_t spine = a.spine_of(s, d);
      ASSERT_EQ(spine, b.spine_of(s, d)) << "deterministic";
      const Route r = a.route(s, d);
      ASSERT_EQ(r.hops, 4u);
      EXPECT_EQ(r.resources[1], a.uplink(a.leaf_of(s), spine));
      EXPECT_EQ(r.resources[2], a.downlink(spine, a.leaf_of(d)));
      ++per_spine[spine];
      ++pairs;
    }
  }
  ASSERT_EQ(per_spine.size(), 4u) << "every spine carries some pairs";
  for (const auto& [spine, n] : per_spine) {
    // 3,584 pairs, 896 per spine if perfectly even: a hash within 10% of it.
    EXPECT_NEAR(n, pairs / 4.0, pairs / 40.0) << "spine " << spine;
  }
  EXPECT_EQ(a.route(0, 1).hops, 2u) << "within a leaf: the two NICs only";
}

TEST(Topology, FlowsOnDifferentSpinesDoNotShareALink) {
  // Leaves of 4, two spines, 2:1: each leaf-spine link carries
  // 4 x 1 GB/s / (2 x 2) = 1 GB/s, a NIC's worth.
  const Cluster c = leaf_spine(8, 4, 2, 2.0);
  const Fabric fabric(c);
  // Two flows from leaf 0 to leaf 1, from different senders to different
  // receivers: on different spines each has a link of its own (1 ms for
  // 1 MB); on one spine they halve its link (2 ms).
  std::vector<Pair> apart, together;
  for (uint32_t d1 = 4; d1 < 8; ++d1) {
    for (uint32_t d2 = 4; d2 < 8; ++d2) {
      if (d1 == d2) continue;
      const bool same = fabric.spine_of(0, d1) == fabric.spine_of(1, d2);
      if (same && together.empty()) together = {{0, d1}, {1, d2}};
      if (!same && apart.empty()) apart = {{0, d1}, {1, d2}};
    }
  }
  ASSERT_FALSE(apart.empty());
  ASSERT_FALSE(together.empty());
  EXPECT_EQ(write_all(c, apart), (std::vector<TimeNs>{1000000 + kCrossLeafNs, 1000000 + kCrossLeafNs}));
  EXPECT_EQ(write_all(c, together), (std::vector<TimeNs>{2000000 + kCrossLeafNs, 2000000 + kCrossLeafNs}));
}

TEST(Topology, FlowsOnDifferentRailsDoNotInterfere) {
  const Cluster c = rail(8, 2);
  const Fabric fabric(c);
  EXPECT_EQ(fabric.rail_of(0, 5), fabric.rail_of(5, 0)) << "both ends of a queue pair on one rail";
  // Two peers of node 0 on different rails, and two on the same one.
  std::vector<uint32_t> on_rail[2];
  for (uint32_t d = 1; d < c.nodes; ++d) on_rail[fabric.rail_of(0, d)].push_back(d);
  ASSERT_GE(on_rail[0].size(), 2u);
  ASSERT_GE(on_rail[1].size(), 1u);
  // Different rails: node 0's two NICs, 1 GB/s each: 1 ms.
  EXPECT_EQ(write_all(c, {{0, on_rail[0][0]}, {0, on_rail[1][0]}}),
            (std::vector<TimeNs>{1000000 + kIntraLeafNs, 1000000 + kIntraLeafNs}));
  // One rail: one NIC shared: 2 ms, as in a star.
  EXPECT_EQ(write_all(c, {{0, on_rail[0][0]}, {0, on_rail[0][1]}}),
            (std::vector<TimeNs>{2000000 + kIntraLeafNs, 2000000 + kIntraLeafNs}));
  EXPECT_EQ(write_all(base(8), {{0, on_rail[0][0]}, {0, on_rail[1][0]}}),
            (std::vector<TimeNs>{2000000 + kIntraLeafNs, 2000000 + kIntraLeafNs}));
}

TEST(Topology, TheMeterCountsLinksAndRailNics) {
  std::vector<ResourceUsage> usage;
  write_all(leaf_spine(4, 2, 1, 2.0), {{0, 2}, {1, 3}}, kMB, &usage);
  std::map<std::string, ResourceUsage> by_name;
  for (const ResourceUsage& u : usage) by_name[u.name] = u;
  // 2 MB over a 1 GB/s link: busy 2 ms, the run's bottleneck.
  ASSERT_EQ(by_name.count("leaf0->spine0"), 1u);
  EXPECT_EQ(by_name["leaf0->spine0"].bytes, 2u * kMB);
  EXPECT_EQ(by_name["leaf0->spine0"].busy_ns, 2000000);
  EXPECT_EQ(by_name["leaf0->spine0"].kind, ResourceKind::kFabricLink);
  EXPECT_EQ(by_name["spine0->leaf1"].busy_ns, 2000000);
  EXPECT_EQ(by_name["spine0->leaf0"].bytes, 0u);
  EXPECT_EQ(by_name["node0/nic tx"].busy_ns, 1000000);
  EXPECT_EQ(busiest_resource(usage)->name, "leaf0->spine0");

  const Cluster c = rail(4, 2);
  const Fabric fabric(c);
  write_all(c, {{0, 1}}, kMB, &usage);
  const std::string nic = "node0/nic" + std::to_string(fabric.rail_of(0, 1)) + " tx";
  bool found = false;
  for (const ResourceUsage& u : usage) {
    if (u.name == nic) {
      found = true;
      EXPECT_EQ(u.busy_ns, 1000000);
    }
  }
  EXPECT_TRUE(found) << nic;
}

TEST(Topology, TheDotGraphCablesEveryNodeAndLink) {
  Cluster c = leaf_spine(8, 4, 2, 4.0);
  c.nic_bandwidth_bytes_per_s = 12.5e9;  // 100 Gbps: leaf-spine links 4 x 100 / (2 x 4) = 50
  const std::string ls = fabric_dot(c, "t");
  EXPECT_EQ(ls.rfind("graph \"t\" {", 0), 0u) << ls;
  EXPECT_NE(ls.find("spine1 -- leaf0 [label=\"50 Gbps\""), std::string::npos) << ls;
  EXPECT_NE(ls.find("leaf1 -- node7 [label=\"100 Gbps\"]"), std::string::npos) << ls;
  EXPECT_EQ(ls.find("leaf2"), std::string::npos) << "two leaves of 4 nodes";
  const std::string r = fabric_dot(rail(8, 4), "r");
  EXPECT_NE(r.find("rail3 -- node7:nic3:n;"), std::string::npos) << r;
  EXPECT_EQ(r.find("rail4"), std::string::npos) << r;
  const std::string star = fabric_dot(base(3), "s");
  EXPECT_NE(star.find("switch -- node2 [label=\"8 Gbps\"]"), std::string::npos) << star;
}

}  // namespace
}  // namespace tensorwire::sim::testing
