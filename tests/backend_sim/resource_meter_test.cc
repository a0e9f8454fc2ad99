// The resource meter against hand-computed busy times, and the jitter model's
// effect on the simulated hardware (seeded, off by default).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/resource_usage.h"
#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

constexpr uint32_t kMiB = 1u << 20;
const Access kRw = Access::kLocalWrite | Access::kRemoteWrite;

Cluster cluster(uint32_t nodes, uint32_t gpus = 0) {
  Cluster c;
  c.nodes = nodes;
  c.gpus_per_node = gpus;
  c.nic_bandwidth_bytes_per_s = 12.5e9;  // 100 Gbps
  c.nic_latency_ns = 1500;
  c.pcie_bandwidth_bytes_per_s = 12e9;
  c.pcie_latency_ns = 1000;
  return c;
}

const ResourceUsage& named(const std::vector<ResourceUsage>& usage, const std::string& name) {
  for (const ResourceUsage& u : usage) {
    if (u.name == name) return u;
  }
  ADD_FAILURE() << "no resource " << name;
  static const ResourceUsage none;
  return none;
}

TEST(ResourceMeter, OneMebibyteOverOneLinkBusiesItsSendSideForSizeOverBandwidth) {
  SimFixture f(cluster(2), /*payload=*/false);
  MemoryRegion src = f.region(0, kMiB, Access::kNone);
  MemoryRegion dst = f.region(1, kMiB, kRw);
  ASSERT_TRUE(f.write(0, 1, src, dst, kMiB).is_ok());
  f.sim().run();
  const std::vector<ResourceUsage> usage = f.sim().resource_usage();
  // 1 MiB at 12.5 GB/s: 1,048,576 / 12.5 = 83,886.08 ns.
  EXPECT_EQ(named(usage, "node0/nic tx").busy_ns, 83886);
  EXPECT_EQ(named(usage, "node0/nic tx").bytes, kMiB);
  EXPECT_EQ(named(usage, "node1/nic rx").busy_ns, 83886);
  EXPECT_EQ(named(usage, "node0/nic rx").busy_ns, 0);
  EXPECT_EQ(named(usage, "node1/nic tx").busy_ns, 0);
  const ResourceUsage* busiest = busiest_resource(usage);
  ASSERT_NE(busiest, nullptr);
  EXPECT_EQ(busiest->name, "node0/nic tx") << "the send side, first of the two equal sides";
  EXPECT_EQ(busiest->kind, ResourceKind::kNicSend);
  // Registration is CPU work: base plus a page count each.
  EXPECT_GT(named(usage, "rank 0/cpu").busy_ns, 0);
}

TEST(ResourceMeter, TwoFlowsOutOfOnePortAddUpOnItsSendSide) {
  SimFixture f(cluster(3), false);
  MemoryRegion src = f.region(0, kMiB, Access::kNone);
  MemoryRegion d1 = f.region(1, kMiB, kRw);
  MemoryRegion d2 = f.region(2, kMiB, kRw);
  ASSERT_TRUE(f.write(0, 1, src, d1, kMiB, 1).is_ok());
  ASSERT_TRUE(f.write(0, 2, src, d2, kMiB, 2).is_ok());
  f.sim().run();
  const std::vector<ResourceUsage> usage = f.sim().resource_usage();
  EXPECT_EQ(named(usage, "node0/nic tx").busy_ns, 167772);  // 2 MiB / 12.5 GB/s
  EXPECT_EQ(named(usage, "node1/nic rx").busy_ns, 83886);
  EXPECT_EQ(named(usage, "node2/nic rx").busy_ns, 83886);
  EXPECT_EQ(busiest_resource(usage)->name, "node0/nic tx");
}

TEST(ResourceMeter, ACopyBusiesItsEngineForSizeOverPcieBandwidth) {
  SimFixture f(cluster(1, 2), false);
  RankEnv a = f.env(0);
  Buffer host = *a.memory.allocate(MemoryKind::kHostPinned, 0, kMiB);
  Buffer gpu = *a.memory.allocate(MemoryKind::kDeviceGpuDirect, 1, kMiB);
  ASSERT_TRUE(a.copy_engine.submit(gpu, 0, host, 0, kMiB, [](Status st) { ASSERT_TRUE(st.is_ok()); })
                  .is_ok());
  f.sim().run();
  const std::vector<ResourceUsage> usage = f.sim().resource_usage();
  // ceil(1,048,576 / 12) = 87,382 ns; the latency overlaps the next copy, so it is not busy time.
  EXPECT_EQ(named(usage, "node0/copy1").busy_ns, 87382);
  EXPECT_EQ(named(usage, "node0/copy1").bytes, kMiB);
  EXPECT_EQ(named(usage, "node0/copy0").busy_ns, 0);
  EXPECT_EQ(busiest_resource(usage)->kind, ResourceKind::kCopyEngine);
}

TEST(ResourceMeter, AWindowIsTheDifferenceOfTwoSnapshots) {
  SimFixture f(cluster(2), false);
  MemoryRegion src = f.region(0, kMiB, Access::kNone);
  MemoryRegion dst = f.region(1, kMiB, kRw);
  ASSERT_TRUE(f.write(0, 1, src, dst, kMiB, 1).is_ok());
  f.sim().run();
  const std::vector<ResourceUsage> before = f.sim().resource_usage();
  ASSERT_TRUE(f.write(0, 1, src, dst, kMiB / 2, 2).is_ok());
  f.sim().run();
  const std::vector<ResourceUsage> window = usage_between(before, f.sim().resource_usage());
  EXPECT_EQ(named(window, "node0/nic tx").bytes, kMiB / 2);
  EXPECT_EQ(named(window, "node0/nic tx").busy_ns, 41943);  // 524,288 / 12.5 = 41,943.04
  EXPECT_EQ(named(window, "rank 0/cpu").busy_ns, 0) << "no registration in the window";
}

// The receiver's completion time of one 1 MiB write with immediate.
TimeNs write_landing_ns(const Cluster& c, uint64_t seed) {
  SimOptions options;
  options.payload = false;
  options.seed = seed;
  SimFixture f(c, options);
  MemoryRegion src = f.region(0, kMiB, Access::kNone);
  MemoryRegion dst = f.region(1, kMiB, kRw);
  EXPECT_TRUE(f.recv(1, 0, dst, 0).is_ok());
  f.sim().run_until(1'000'000);
  EXPECT_TRUE(f.write(0, 1, src, dst, kMiB, 1, /*with_imm=*/true, 3).is_ok());
  f.sim().run();
  EXPECT_EQ(f.completions(1).size(), 1u);
  return f.completions(1).empty() ? 0 : f.completions(1)[0].at_ns;
}

TEST(Jitter, AFixedMessageDelayAddsExactlyItsDraw) {
  Cluster jittered = cluster(2);
  jittered.jitter.message_latency.distribution = JitterDistribution::kUniform;
  jittered.jitter.message_latency.min_ns = 700;
  jittered.jitter.message_latency.max_ns = 700;
  EXPECT_EQ(write_landing_ns(jittered, 1), write_landing_ns(cluster(2), 1) + 700);
}

TEST(Jitter, DrawsFollowTheSeedAndOnlyTheSeed) {
  Cluster c = cluster(2);
  c.jitter.message_latency.distribution = JitterDistribution::kExponential;
  c.jitter.message_latency.mean_ns = 5000;
  EXPECT_EQ(write_landing_ns(c, 11), write_landing_ns(c, 11));
  EXPECT_NE(write_landing_ns(c, 11), write_landing_ns(c, 12));
  // Off: the seed changes nothing.
  EXPECT_EQ(write_landing_ns(cluster(2), 11), write_landing_ns(cluster(2), 12));
}

TEST(Jitter, CopyNoiseLengthensTheCopyAndItsBusyTime) {
  Cluster c = cluster(1, 1);
  c.jitter.copy_engine.distribution = JitterDistribution::kUniform;
  c.jitter.copy_engine.min_ns = 2000;
  c.jitter.copy_engine.max_ns = 2000;
  SimFixture f(c, false);
  RankEnv a = f.env(0);
  Buffer host = *a.memory.allocate(MemoryKind::kHostPinned, 0, kMiB);
  Buffer gpu = *a.memory.allocate(MemoryKind::kDeviceGpuDirect, 0, kMiB);
  TimeNs done_ns = 0;
  const TimeNs start = f.sim().now_ns();
  ASSERT_TRUE(a.copy_engine.submit(gpu, 0, host, 0, kMiB, [&](Status) { done_ns = f.sim().now_ns(); })
                  .is_ok());
  f.sim().run();
  EXPECT_EQ(done_ns - start, 87382 + 2000 + 1000);  // bytes / bandwidth + noise + latency
  EXPECT_EQ(named(f.sim().resource_usage(), "node0/copy0").busy_ns, 87382 + 2000);
}

}  // namespace
}  // namespace tensorwire::sim::testing
