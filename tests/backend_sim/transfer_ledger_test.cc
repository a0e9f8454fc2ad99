// The simulator's attribution of work to tensor transfers (transfer_ledger.h):
// a hand-played request/response whose breakdown is computed by hand, a copy,
// a timer, and work outside any transfer.
#include <gtest/gtest.h>

#include "backend_sim/transfer_ledger.h"
#include "core/transfer_attribution.h"
#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

constexpr double kBandwidth = 12.5e9;  // 100 Gbps
constexpr TimeNs kLatency = 1500;
constexpr uint32_t kBytes = 8u << 20;  // 8 MiB
constexpr uint32_t kRequestBytes = 64;
const Access kRw = Access::kLocalWrite | Access::kRemoteWrite;

Cluster cluster() {
  Cluster c;
  c.nodes = 2;
  c.gpus_per_node = 1;
  c.nic_bandwidth_bytes_per_s = kBandwidth;
  c.nic_latency_ns = kLatency;
  c.pcie_bandwidth_bytes_per_s = 12e9;
  c.pcie_latency_ns = 1000;
  return c;
}

// Rank 1 asks rank 0 (a 64-byte send) for a tensor, rank 0's handler writes
// it back with an immediate: the handler's write must inherit the request's
// transfer without naming it.
struct RequestResponse {
  SimFixture f{cluster(), /*payload=*/false};
  MemoryRegion request = f.region(1, kRequestBytes, kRw);
  MemoryRegion request_in = f.region(0, kRequestBytes, kRw);
  MemoryRegion tensor = f.region(0, kBytes, Access::kNone);
  MemoryRegion landing = f.region(1, kBytes, kRw);
  TimeNs request_handled_ns = -1;
  TimeNs done_ns = -1;

  RequestResponse() {
    f.env(0).nic.set_completion_handler([this](const Completion& c) {
      if (c.opcode != CompletionOpcode::kRecv) return;
      request_handled_ns = f.sim().now_ns();
      EXPECT_TRUE(f.write(0, 1, tensor, landing, kBytes, 9, /*with_imm=*/true, 1).is_ok());
    });
    f.env(1).nic.set_completion_handler([this](const Completion& c) {
      if (c.opcode == CompletionOpcode::kRecvRdmaWithImm) done_ns = f.sim().now_ns();
    });
    EXPECT_TRUE(f.recv(0, 1, request_in, kRequestBytes).is_ok());
    EXPECT_TRUE(f.recv(1, 0, landing, 0).is_ok());
    // Registration occupied the CPUs; start once both are free.
    f.sim().run_until(1'000'000);
  }
};

TEST(TransferLedger, RequestAndResponseSplitIntoControlWireAndOther) {
  RequestResponse p;
  const uint64_t tag = transfer_tag(0, 0);
  const TimeNs start = p.f.sim().now_ns();
  {
    const CurrentTransfer current(p.f.env(1).attribution, tag);
    ASSERT_TRUE(p.f.send(1, 0, p.request, kRequestBytes).is_ok());
  }
  p.f.sim().run();
  ASSERT_GT(p.done_ns, start);
  // The Recv was called 1 us before the request went out: that is "other".
  const TimeNs recv_called = start - 1000;
  const TransferBreakdown b = p.f.sim().transfer_breakdown(tag, 0, 1, recv_called, p.done_ns);
  // By hand: the request is 64 bytes on the wire (6 ns) plus a latency; the
  // response is 8 MiB at 12.5 GB/s (671,089 ns) plus a latency.
  const TimeNs request_ns = 6 + kLatency;
  const TimeNs response_ns = 671'089 + kLatency;
  EXPECT_EQ(p.request_handled_ns - start, request_ns);
  EXPECT_EQ(b.control_messages, 1u);
  EXPECT_EQ(b.control_ns, request_ns);
  EXPECT_EQ(b.wire_ns, p.done_ns - p.request_handled_ns);
  expect_within_1_percent(static_cast<double>(b.wire_ns), static_cast<double>(response_ns),
                          "response on the wire");
  EXPECT_EQ(b.queueing_ns, 0);
  EXPECT_EQ(b.copies_ns, 0);
  EXPECT_EQ(b.other_ns, 1000);
  EXPECT_EQ(b.total_ns(), p.done_ns - recv_called);
}

TEST(TransferLedger, AnotherTransfersWorkIsNotCounted) {
  RequestResponse p;
  const TimeNs start = p.f.sim().now_ns();
  {
    const CurrentTransfer current(p.f.env(1).attribution, transfer_tag(0, 1));
    ASSERT_TRUE(p.f.send(1, 0, p.request, kRequestBytes).is_ok());
  }
  p.f.sim().run();
  const TransferBreakdown b =
      p.f.sim().transfer_breakdown(transfer_tag(0, 0), 0, 1, start, p.done_ns);
  EXPECT_EQ(b.control_messages, 0u);
  EXPECT_EQ(b.other_ns, p.done_ns - start);
}

// Work no transfer owns (posted under none, or under one already done: a
// protocol's queue drained from a later handler) counts for every transfer
// between its ranks, and for none between others.
TEST(TransferLedger, UnownedWorkCountsForTransfersBetweenItsRanks) {
  RequestResponse p;
  const TimeNs start = p.f.sim().now_ns();
  const uint64_t done_tag = transfer_tag(0, 3);
  p.f.env(1).attribution->transfer_done(done_tag);
  {
    const CurrentTransfer current(p.f.env(1).attribution, done_tag);
    ASSERT_TRUE(p.f.send(1, 0, p.request, kRequestBytes).is_ok());
  }
  p.f.sim().run();
  const TransferBreakdown b =
      p.f.sim().transfer_breakdown(transfer_tag(1, 0), 1, 0, start, p.done_ns);
  EXPECT_EQ(b.control_messages, 1u);
  EXPECT_EQ(b.control_ns, p.request_handled_ns - start);
  EXPECT_EQ(b.wire_ns, p.done_ns - p.request_handled_ns);
  EXPECT_EQ(b.other_ns, 0);
  const TransferBreakdown elsewhere =
      p.f.sim().transfer_breakdown(transfer_tag(1, 0), 0, 2, start, p.done_ns);
  EXPECT_EQ(elsewhere.other_ns, p.done_ns - start);
}

TEST(TransferLedger, CopiesQueueBehindEachOtherAndTimersInheritTheTransfer) {
  SimFixture f(cluster(), /*payload=*/false);
  RankEnv env = f.env(0);
  Result<Buffer> host = env.memory.allocate(MemoryKind::kHostPinned, 0, kBytes);
  Result<Buffer> gpu = env.memory.allocate(MemoryKind::kDeviceGpuDirect, 0, kBytes);
  ASSERT_TRUE(host.is_ok()) << host.status().to_string();
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  f.sim().run_until(1'000'000);
  const TimeNs start = f.sim().now_ns();
  const uint64_t tag = transfer_tag(2, 5);
  TimeNs copied_ns = -1;
  {
    const CurrentTransfer current(env.attribution, tag);
    // Two copies on one engine: the second waits for the first (queueing).
    ASSERT_TRUE(env.copy_engine.submit(*gpu, 0, *host, 0, kBytes, [](Status) {}).is_ok());
    // A timer set now fires for the same transfer: its copy is counted too.
    env.clock.schedule_after(10, [&] {
      ASSERT_TRUE(env.copy_engine.submit(*gpu, 0, *host, 0, kBytes, [&](Status) {
        copied_ns = f.sim().now_ns();
      }).is_ok());
    });
  }
  f.sim().run();
  ASSERT_GT(copied_ns, start);
  const TransferBreakdown b = f.sim().transfer_breakdown(tag, 0, 1, start, copied_ns);
  const TimeNs one_copy_ns = 699'051;  // 8 MiB at 12 GB/s, rounded up
  // The first copy's busy time, then the second's busy time and latency; the
  // second waits from 10 ns in until the first is done, under copies anyway.
  EXPECT_EQ(b.copies_ns, copied_ns - start);
  EXPECT_EQ(copied_ns - start, 2 * one_copy_ns + 1000);
  EXPECT_EQ(b.other_ns, 0);
  EXPECT_EQ(b.queueing_ns, 0);
  // Another transfer's tag saw none of it.
  EXPECT_EQ(f.sim().transfer_breakdown(transfer_tag(2, 4), 0, 1, start, copied_ns).other_ns,
            copied_ns - start);
}

TEST(TransferLedger, TagsNameStepAndTransfer) {
  EXPECT_NE(transfer_tag(0, 0), 0u);
  EXPECT_EQ(tag_step_index(transfer_tag(7, 3)), 7u);
  EXPECT_EQ(tag_transfer_index(transfer_tag(7, 3)), 3u);
  EXPECT_NE(transfer_tag(1, 0), transfer_tag(0, 1));
}

}  // namespace
}  // namespace tensorwire::sim::testing

namespace tensorwire::sim::testing {
namespace {

SendWorkRequest send_of(uint32_t bytes) {
  SendWorkRequest wr;
  wr.opcode = WorkOpcode::kSend;  // completes at both ends
  wr.local.length = bytes;
  return wr;
}

// A flushed request's record goes once nothing is left to take it: at the
// flush when it never landed (no receiver's completion will come), with the
// receiver's completion when it had.
TEST(TransferLedger, AFlushedRequestsRecordGoesWithItsLastCompletion) {
  TransferLedger ledger;
  ledger.on_posted(1, /*tag=*/7, 0, 1, send_of(64), 100);
  ledger.on_flushed(1);
  EXPECT_EQ(ledger.take_handler(1, 200), 0u) << "never landed: gone at the flush";

  ledger.on_posted(2, /*tag=*/8, 0, 1, send_of(64), 300);
  ledger.on_landed(2, 400);
  ledger.on_flushed(2);
  EXPECT_EQ(ledger.take_handler(2, 500), 8u) << "landed: the receiver's completion still takes it";
  EXPECT_EQ(ledger.take_handler(2, 600), 0u) << "and then it is gone";

  ledger.on_flushed(3);  // unknown: nothing to do
}

}  // namespace
}  // namespace tensorwire::sim::testing
