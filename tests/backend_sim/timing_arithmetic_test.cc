// The simulator's timings checked against arithmetic (each within 1%).
#include <gtest/gtest.h>

#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

constexpr double kBandwidth = 12.5e9;  // 100 Gbps
constexpr TimeNs kLatency = 1500;
constexpr uint32_t kBytes = 8u << 20;  // 8 MiB

Cluster cluster(uint32_t nodes, uint32_t gpus = 0) {
  Cluster c;
  c.nodes = nodes;
  c.gpus_per_node = gpus;
  c.nic_bandwidth_bytes_per_s = kBandwidth;
  c.nic_latency_ns = kLatency;
  c.pcie_bandwidth_bytes_per_s = 12e9;
  c.pcie_latency_ns = 1000;
  return c;
}

const Access kRw = Access::kLocalWrite | Access::kRemoteWrite;

TEST(TimingArithmetic, OneWriteTakesLatencyPlusSizeOverBandwidth) {
  SimFixture f(cluster(2), /*payload=*/false);
  MemoryRegion src = f.region(0, kBytes, Access::kNone);
  MemoryRegion dst = f.region(1, kBytes, kRw);
  ASSERT_TRUE(f.recv(1, 0, dst, 0, 7).is_ok());
  // Registration occupied the CPUs; start measuring once both are free.
  f.sim().run_until(1'000'000);
  const TimeNs start = f.sim().now_ns();
  ASSERT_TRUE(f.write(0, 1, src, dst, kBytes, 1, /*with_imm=*/true, 42).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(1).size(), 1u);
  ASSERT_EQ(f.completions(0).size(), 1u);
  const double expected = kLatency + kBytes / kBandwidth * 1e9;
  expect_within_1_percent(static_cast<double>(f.completions(1)[0].at_ns - start), expected,
                          "receiver completion");
  expect_within_1_percent(static_cast<double>(f.completions(0)[0].at_ns - start),
                          expected + kLatency, "sender completion (one more latency: the ack)");
  EXPECT_EQ(f.completions(1)[0].completion.imm_data, 42u);
  EXPECT_EQ(f.completions(1)[0].completion.byte_len, kBytes);
  EXPECT_EQ(f.sim().stats(0).bytes_on_wire_tx, kBytes);
}

TEST(TimingArithmetic, TwoFlowsOnOnePortEachGetHalf) {
  SimFixture f(cluster(3), false);
  MemoryRegion src = f.region(0, kBytes, Access::kNone);
  MemoryRegion d1 = f.region(1, kBytes, kRw);
  MemoryRegion d2 = f.region(2, kBytes, kRw);
  ASSERT_TRUE(f.recv(1, 0, d1, 0).is_ok());
  ASSERT_TRUE(f.recv(2, 0, d2, 0).is_ok());
  f.sim().run_until(1'000'000);
  const TimeNs start = f.sim().now_ns();
  ASSERT_TRUE(f.write(0, 1, src, d1, kBytes, 1, true, 1).is_ok());
  ASSERT_TRUE(f.write(0, 2, src, d2, kBytes, 2, true, 2).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(1).size(), 1u);
  ASSERT_EQ(f.completions(2).size(), 1u);
  const double expected = kLatency + 2.0 * kBytes / kBandwidth * 1e9;
  expect_within_1_percent(static_cast<double>(f.completions(1)[0].at_ns - start), expected, "flow 1");
  expect_within_1_percent(static_cast<double>(f.completions(2)[0].at_ns - start), expected, "flow 2");
}

TEST(TimingArithmetic, TwoSendersIntoOneReceiverEachGetHalf) {
  SimFixture f(cluster(3), false);
  MemoryRegion s1 = f.region(1, kBytes, Access::kNone);
  MemoryRegion s2 = f.region(2, kBytes, Access::kNone);
  MemoryRegion dst = f.region(0, 2 * kBytes, kRw);
  f.sim().run_until(1'000'000);
  const TimeNs start = f.sim().now_ns();
  ASSERT_TRUE(f.write(1, 0, s1, dst, kBytes, 1).is_ok());
  ASSERT_TRUE(f.write(2, 0, s2, dst, kBytes, 2).is_ok());
  f.sim().run();
  // Plain writes: the senders' completions come one latency after the data lands.
  const double expected = 2 * kLatency + 2.0 * kBytes / kBandwidth * 1e9;
  ASSERT_EQ(f.completions(1).size(), 1u);
  expect_within_1_percent(static_cast<double>(f.completions(1)[0].at_ns - start), expected, "sender 1");
  expect_within_1_percent(static_cast<double>(f.completions(2)[0].at_ns - start), expected, "sender 2");
}

TEST(TimingArithmetic, ShortFlowFinishingGivesTheLongOneFullBandwidth) {
  SimFixture f(cluster(3), false);
  MemoryRegion src = f.region(0, kBytes, Access::kNone);
  MemoryRegion d1 = f.region(1, kBytes, kRw);
  MemoryRegion d2 = f.region(2, kBytes, kRw);
  f.sim().run_until(1'000'000);
  const TimeNs start = f.sim().now_ns();
  ASSERT_TRUE(f.write(0, 1, src, d1, kBytes, 1).is_ok());
  ASSERT_TRUE(f.write(0, 2, src, d2, kBytes / 4, 2).is_ok());
  f.sim().run();
  // Both share until the short one has moved its quarter (half rate: 2 x quarter),
  // then the long one has 3/4 left... at full rate: total = (kBytes/4*2 + 3/4 kBytes) / bw.
  const double long_expected = 2 * kLatency + (kBytes / 2.0 + kBytes * 0.75) / kBandwidth * 1e9;
  const double short_expected = 2 * kLatency + (kBytes / 2.0) / kBandwidth * 1e9;
  expect_within_1_percent(static_cast<double>(f.completions(0)[0].at_ns - start), short_expected,
                          "short flow");
  expect_within_1_percent(static_cast<double>(f.completions(0)[1].at_ns - start), long_expected,
                          "long flow");
}

TEST(TimingArithmetic, RdmaReadTakesTwoLatenciesPlusSizeOverBandwidth) {
  SimFixture f(cluster(2), true);
  MemoryRegion local = f.region(0, kBytes, Access::kLocalWrite);
  MemoryRegion remote = f.region(1, kBytes, Access::kRemoteRead);
  std::vector<std::byte> pattern(kBytes);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = std::byte(i * 7 + 3);
  ASSERT_TRUE(f.env(1).memory.write_bytes(f.buffer_of(remote), 0, pattern).is_ok());
  f.sim().run_until(1'000'000);
  const TimeNs start = f.sim().now_ns();
  SendWorkRequest wr;
  wr.wr_id = 9;
  wr.opcode = WorkOpcode::kRdmaRead;
  wr.local = {local.addr, kBytes, local.lkey};
  wr.remote_addr = remote.addr;
  wr.rkey = remote.rkey;
  ASSERT_TRUE(f.env(0).nic.post_send(f.env(0).nic.queue_pair_to(1), wr).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 1u);
  EXPECT_EQ(f.completions(0)[0].completion.status, CompletionStatus::kSuccess);
  EXPECT_EQ(f.completions(0)[0].completion.opcode, CompletionOpcode::kRdmaRead);
  expect_within_1_percent(static_cast<double>(f.completions(0)[0].at_ns - start),
                          2 * kLatency + kBytes / kBandwidth * 1e9, "read");
  std::vector<std::byte> got(kBytes);
  ASSERT_TRUE(f.env(0).memory.read_bytes(f.buffer_of(local), 0, got).is_ok());
  EXPECT_EQ(got, pattern);
  EXPECT_EQ(f.sim().stats(1).bytes_on_wire_tx, kBytes);  // the responder's port sent the data
}

TEST(TimingArithmetic, StagingThroughHostAddsBothCopies) {
  Cluster c = cluster(2, 1);
  c.gpu_direct = {{false}, {false}};
  SimFixture f(c, true);
  RankEnv a = f.env(0), b = f.env(1);
  Buffer gpu_src = *a.memory.allocate(MemoryKind::kDeviceNoGpuDirect, 0, kBytes);
  Buffer gpu_dst = *b.memory.allocate(MemoryKind::kDeviceNoGpuDirect, 0, kBytes);
  MemoryRegion proxy_src = f.region(0, kBytes, Access::kNone);
  MemoryRegion proxy_dst = f.region(1, kBytes, kRw);
  std::vector<std::byte> pattern(kBytes, std::byte{0x5a});
  ASSERT_TRUE(a.memory.write_bytes(gpu_src, 0, pattern).is_ok());
  ASSERT_TRUE(f.recv(1, 0, proxy_dst, 0).is_ok());
  f.sim().run_until(1'000'000);
  const TimeNs start = f.sim().now_ns();
  TimeNs done_at = 0;
  // GPU -> host proxy, write, host proxy -> GPU: the path of a GPU without GPUDirect.
  ASSERT_TRUE(a.copy_engine
                  .submit(f.buffer_of(proxy_src), 0, gpu_src, 0, kBytes,
                          [&](Status st) {
                            ASSERT_TRUE(st.is_ok());
                            ASSERT_TRUE(f.write(0, 1, proxy_src, proxy_dst, kBytes, 1, true, 5).is_ok());
                          })
                  .is_ok());
  b.nic.set_completion_handler([&](const Completion& comp) {
    ASSERT_EQ(comp.status, CompletionStatus::kSuccess);
    ASSERT_TRUE(b.copy_engine
                    .submit(gpu_dst, 0, f.buffer_of(proxy_dst), 0, kBytes,
                            [&](Status st) {
                              ASSERT_TRUE(st.is_ok());
                              done_at = f.sim().now_ns();
                            })
                    .is_ok());
  });
  f.sim().run();
  const double copy = 1000 + kBytes / 12e9 * 1e9;
  const double wire = kLatency + kBytes / kBandwidth * 1e9;
  expect_within_1_percent(static_cast<double>(done_at - start), 2 * copy + wire, "staged transfer");
  std::vector<std::byte> got(kBytes);
  ASSERT_TRUE(b.memory.read_bytes(gpu_dst, 0, got).is_ok());
  EXPECT_EQ(got, pattern);
  EXPECT_EQ(f.sim().stats(0).copy_engine_bytes, kBytes);
  EXPECT_EQ(f.sim().stats(1).copy_engine_bytes, kBytes);
}

TEST(TimingArithmetic, RegistrationCostDelaysTheNextPost) {
  Cluster c = cluster(2);
  c.registration_base_ns = 5000;
  c.registration_per_page_ns = 60;
  SimFixture f(c, false);
  MemoryRegion dst = f.region(1, 4096, Access::kLocalWrite | Access::kRemoteWrite);
  f.sim().run_until(1'000'000);
  const TimeNs start = f.sim().now_ns();
  // 1 MiB = 256 pages: 5000 + 256 * 60 ns of CPU before the write can start.
  MemoryRegion src = f.region(0, 1 << 20, Access::kNone);
  ASSERT_TRUE(f.write(0, 1, src, dst, 0).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 1u);
  EXPECT_EQ(f.completions(0)[0].at_ns - start, 5000 + 256 * 60 + 2 * kLatency);
  EXPECT_EQ(f.sim().stats(0).registrations, 1u);
  EXPECT_EQ(f.sim().stats(0).registered_bytes, 1u << 20);
}

TEST(TimingArithmetic, CpuCopyCostsBytesOverMemcpyBandwidth) {
  Cluster c = cluster(2);
  c.host_memcpy_bandwidth_bytes_per_s = 10e9;
  SimFixture f(c, true);
  RankEnv a = f.env(0);
  Buffer x = *a.memory.allocate(MemoryKind::kHostPinned, 0, kBytes);
  Buffer y = *a.memory.allocate(MemoryKind::kHostPageable, 0, kBytes);
  std::vector<std::byte> pattern(kBytes, std::byte{7});
  ASSERT_TRUE(a.memory.write_bytes(x, 0, pattern).is_ok());
  ASSERT_TRUE(a.memory.cpu_copy(y, 0, x, 0, kBytes).is_ok());
  MemoryRegion dst = f.region(1, 64, Access::kLocalWrite | Access::kRemoteWrite);
  MemoryRegion src = f.region(0, 64, Access::kNone);  // waits for the memcpy too
  std::vector<std::byte> got(kBytes);
  ASSERT_TRUE(a.memory.read_bytes(y, 0, got).is_ok());
  EXPECT_EQ(got, pattern);
  EXPECT_EQ(f.sim().stats(0).cpu_copy_bytes, kBytes);
  EXPECT_EQ(f.sim().stats(0).cpu_copies, 1u);
  // The rank's CPU is busy for the memcpy and the registration after it.
  ASSERT_TRUE(f.write(0, 1, src, dst, 0).is_ok());
  f.sim().run();
  const double memcpy_ns = kBytes / 10e9 * 1e9;
  expect_within_1_percent(static_cast<double>(f.completions(0)[0].at_ns),
                          memcpy_ns + c.registration_base_ns + c.registration_per_page_ns +
                              2 * kLatency,
                          "memcpy + registration + write");
}

}  // namespace
}  // namespace tensorwire::sim::testing
