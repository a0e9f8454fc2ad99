// Integration tests of the zero-copy verbs protocol on backend_sim (payload mode).
#include "core/protocols/tf_verbs_zero_copy/rdma_rendezvous.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/transport_stats.h"
#include "backend_sim/simulator.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_write_id.h"
#include "tests/protocols/tf_verbs_zero_copy/sim_cluster.h"

namespace tensorwire::tf_verbs {
namespace {

using testing::RecvRecord;
using testing::SimCluster;

constexpr RecvArgs kHost{MemoryKind::kHostPinned, 0};

Cluster two_nodes_with_gpus(bool gpu_direct) {
  Cluster config;
  config.nodes = 2;
  config.gpus_per_node = 1;
  config.gpu_direct = {{gpu_direct}, {gpu_direct}};
  return config;
}

TEST(RdmaRendezvousTest, RecvBeforeSendDeliversTheTensor) {
  SimCluster c;
  RecvRecord rec;
  c.recv(1, 0, "w", 1, kHost, rec);
  c.sim().run();
  EXPECT_EQ(rec.calls, 0);  // parked at the sender until Send
  EXPECT_EQ(c.rdv(0).pending_responses(), 1u);
  Tensor t = c.make_tensor(0, MemoryKind::kHostPinned, 0, DataType::kFloat32, {{4, 8}}, 7);
  ASSERT_TRUE(c.rdv(0).send("w", 1, t).is_ok());
  c.sim().run();
  ASSERT_EQ(rec.calls, 1);
  ASSERT_TRUE(rec.status.is_ok()) << rec.status.to_string();
  EXPECT_TRUE(c.check_same(1, rec.tensor, t, 7).is_ok());
  EXPECT_EQ(rec.tensor.buffer.kind, MemoryKind::kHostPinned);
  EXPECT_EQ(c.rdv(1).outstanding_requests(), 0u);
  EXPECT_EQ(c.rdv(0).pending_responses(), 0u);
  c.rdv(1).release(rec.tensor);
}

TEST(RdmaRendezvousTest, SendBeforeRecvDeliversTheTensorAndRunsSendDone) {
  SimCluster c;
  Tensor t = c.make_tensor(0, MemoryKind::kHostPageable, 0, DataType::kInt64, {{3, 5}}, 11);
  int send_done = 0;
  Status send_status(StatusCode::kInternal, "not run");
  ASSERT_TRUE(c.rdv(0).send("b", 4, t, [&](Status st) {
                        ++send_done;
                        send_status = st;
                      }).is_ok());
  c.sim().run();
  EXPECT_EQ(send_done, 0);
  RecvRecord rec;
  c.recv(1, 0, "b", 4, kHost, rec);
  c.sim().run();
  ASSERT_EQ(rec.calls, 1);
  ASSERT_TRUE(rec.status.is_ok()) << rec.status.to_string();
  EXPECT_TRUE(c.check_same(1, rec.tensor, t, 11).is_ok());
  EXPECT_EQ(send_done, 1);
  EXPECT_TRUE(send_status.is_ok());
}

// Snapshot of both ranks' counters (protocol and simulator) around one step.
struct Counters {
  RendezvousStats p0, p1;
  TransportStats s0, s1;
  static Counters of(SimCluster& c) {
    return {c.rdv(0).stats(), c.rdv(1).stats(), c.sim().stats(0), c.sim().stats(1)};
  }
};

// One step of tensor "w" from rank 0 to rank 1; checks the content arrived.
void transfer_step(SimCluster& c, const Tensor& t, uint64_t step, uint64_t content_seed,
                   RecvArgs args) {
  if (c.env(0).memory.holds_payload() && t.total_bytes() > 0) {
    ASSERT_TRUE(c.env(0)
                    .memory.write_bytes(t.buffer, 0,
                                        testing::pattern_bytes(content_seed, t.total_bytes()))
                    .is_ok());
  }
  RecvRecord rec;
  c.recv(1, 0, "w", step, args, rec);
  ASSERT_TRUE(c.rdv(0).send("w", step, t).is_ok());
  c.sim().run();
  ASSERT_EQ(rec.calls, 1);
  ASSERT_TRUE(rec.status.is_ok()) << rec.status.to_string();
  EXPECT_EQ(rec.tensor.buffer.kind, args.dst_kind);
  EXPECT_TRUE(c.check_same(1, rec.tensor, t, content_seed).is_ok()) << "step " << step;
  c.rdv(1).release(rec.tensor);
}

// Steady state: exactly one control message (the TENSOR_REQUEST) and one RDMA
// write, no copies of any kind, and (once the source is registered) no registration.
void expect_steady_state_step(const Counters& a, const Counters& b, uint64_t registrations) {
  EXPECT_EQ(b.p1.tensor_requests_sent - a.p1.tensor_requests_sent, 1u);
  EXPECT_EQ(b.p0.meta_data_updates_sent - a.p0.meta_data_updates_sent, 0u);
  EXPECT_EQ(b.p1.re_requests_sent - a.p1.re_requests_sent, 0u);
  EXPECT_EQ(b.p0.content_writes - a.p0.content_writes, 1u);
  EXPECT_EQ(b.p0.cpu_copies + b.p1.cpu_copies, a.p0.cpu_copies + a.p1.cpu_copies);
  EXPECT_EQ(b.p0.device_copies + b.p1.device_copies, a.p0.device_copies + a.p1.device_copies);
  EXPECT_EQ(b.p0.registrations + b.p1.registrations - a.p0.registrations - a.p1.registrations,
            registrations);
  // The simulator agrees: rank 1 sent one message, rank 0 wrote once, no CPU copy.
  EXPECT_EQ(b.s1.sends - a.s1.sends, 1u);
  EXPECT_EQ(b.s0.sends - a.s0.sends, 0u);
  EXPECT_EQ(b.s0.rdma_writes_with_imm - a.s0.rdma_writes_with_imm, 1u);
  EXPECT_EQ(b.s1.rdma_writes_with_imm - a.s1.rdma_writes_with_imm, 0u);
  EXPECT_EQ(b.s0.cpu_copy_bytes + b.s1.cpu_copy_bytes, a.s0.cpu_copy_bytes + a.s1.cpu_copy_bytes);
  EXPECT_EQ(b.s0.registrations + b.s1.registrations - a.s0.registrations - a.s1.registrations,
            registrations);
}

TEST(RdmaRendezvousTest, FirstTransferUpdatesMetaDataThenSteadyStateIsOneMessageOneWriteNoCopy) {
  SimCluster c;
  Tensor t = c.make_tensor(0, MemoryKind::kHostPinned, 0, DataType::kFloat32, {{256}}, 1);
  // Step 1: request, meta-data update, re-request, one write of the clone.
  transfer_step(c, t, 1, 1, kHost);
  Counters first = Counters::of(c);
  EXPECT_EQ(first.p1.tensor_requests_sent, 1u);
  EXPECT_EQ(first.p0.meta_data_updates_sent, 1u);
  EXPECT_EQ(first.p1.re_requests_sent, 1u);
  EXPECT_EQ(first.p0.content_writes, 1u);
  EXPECT_EQ(first.p0.cpu_copies, 1u);  // the clone
  // Step 2, same meta-data: straight from the source (registered on first use).
  transfer_step(c, t, 2, 2, kHost);
  Counters second = Counters::of(c);
  expect_steady_state_step(first, second, 1);
  // Step 3: nothing new at all.
  transfer_step(c, t, 3, 3, kHost);
  expect_steady_state_step(second, Counters::of(c), 0);
}

TEST(RdmaRendezvousTest, MetaDataChangeReallocatesAndDeliversTheNewContent) {
  SimCluster c;
  std::vector<TensorShape> shapes = {{{4}}, {{64, 3}}, {{64, 3}}, {{2}}, {{3, 64}}};
  uint64_t updates_before = 0;
  for (uint64_t step = 0; step < shapes.size(); ++step) {
    Tensor t = c.make_tensor(0, MemoryKind::kHostPinned, 0, DataType::kInt32, shapes[step],
                             100 + step);
    RecvRecord rec;
    c.recv(1, 0, "v", step, kHost, rec);
    ASSERT_TRUE(c.rdv(0).send("v", step, t).is_ok());
    c.sim().run();
    ASSERT_EQ(rec.calls, 1) << "step " << step;
    ASSERT_TRUE(rec.status.is_ok()) << rec.status.to_string();
    EXPECT_TRUE(c.check_same(1, rec.tensor, t, 100 + step).is_ok()) << "step " << step;
    uint64_t updates = c.rdv(0).stats().meta_data_updates_sent;
    // Every shape change costs an update; a repeated shape does not.
    bool changed = step == 0 || !(shapes[step] == shapes[step - 1]);
    EXPECT_EQ(updates - updates_before, changed ? 1u : 0u) << "step " << step;
    updates_before = updates;
    c.rdv(1).release(rec.tensor);
  }
  EXPECT_EQ(c.rdv(1).stats().re_requests_sent, 4u);
}

TEST(RdmaRendezvousTest, DeadTensorArrivesDeadWithoutContent) {
  SimCluster c;
  for (uint64_t step = 1; step <= 2; ++step) {
    RecvRecord rec;
    c.recv(1, 0, "d", step, kHost, rec);
    ASSERT_TRUE(c.rdv(0).send("d", step, SimCluster::make_dead_tensor(DataType::kFloat32, {{8}}))
                    .is_ok());
    c.sim().run();
    ASSERT_EQ(rec.calls, 1);
    ASSERT_TRUE(rec.status.is_ok()) << rec.status.to_string();
    EXPECT_TRUE(rec.tensor.is_dead);
    EXPECT_EQ(rec.tensor.buffer.length, 0u);
  }
  // The second step needs no meta-data update: the cache knows it is dead.
  EXPECT_EQ(c.rdv(0).stats().meta_data_updates_sent, 1u);
  EXPECT_EQ(c.rdv(0).stats().content_writes, 2u);
  EXPECT_EQ(c.rdv(0).pending_responses(), 0u);
  EXPECT_EQ(c.rdv(1).outstanding_requests(), 0u);
}

TEST(RdmaRendezvousTest, EmptyTensorCompletesWithAZeroByteWrite) {
  SimCluster c;
  for (uint64_t step = 1; step <= 2; ++step) {
    Tensor t = c.make_tensor(0, MemoryKind::kHostPinned, 0, DataType::kFloat64, {{0, 5}}, 3);
    RecvRecord rec;
    ASSERT_TRUE(c.rdv(0).send("e", step, t).is_ok());
    c.recv(1, 0, "e", step, kHost, rec);
    c.sim().run();
    ASSERT_EQ(rec.calls, 1);
    ASSERT_TRUE(rec.status.is_ok()) << rec.status.to_string();
    EXPECT_FALSE(rec.tensor.is_dead);
    EXPECT_EQ(rec.tensor.shape, (TensorShape{{0, 5}}));
    EXPECT_EQ(rec.tensor.total_bytes(), 0u);
    c.rdv(1).release(rec.tensor);
  }
  EXPECT_EQ(c.rdv(0).stats().meta_data_updates_sent, 1u);
}

TEST(RdmaRendezvousTest, StringTensorIsSerializedWrittenAndDeserialized) {
  SimCluster c;
  for (uint64_t step = 1; step <= 3; ++step) {
    // Step 3 changes the strings' total size: a new proto size, a new update.
    Tensor t = SimCluster::make_string_tensor({{step == 3 ? 9 : 6}}, step == 3 ? 99 : 5);
    RecvRecord rec;
    c.recv(1, 0, "s", step, kHost, rec);
    ASSERT_TRUE(c.rdv(0).send("s", step, t).is_ok());
    c.sim().run();
    ASSERT_EQ(rec.calls, 1);
    ASSERT_TRUE(rec.status.is_ok()) << rec.status.to_string();
    EXPECT_EQ(rec.tensor.strings, t.strings) << "step " << step;
  }
  EXPECT_EQ(c.rdv(0).stats().meta_data_updates_sent, 2u);
  EXPECT_EQ(c.rdv(0).stats().content_writes, 3u);
}

TEST(RdmaRendezvousTest, GpuWithoutGpuDirectGoesThroughHostProxyAndCopyEngine) {
  SimCluster c(two_nodes_with_gpus(false));
  const RecvArgs gpu{MemoryKind::kDeviceNoGpuDirect, 0};
  for (uint64_t step = 1; step <= 2; ++step) {
    Tensor t = c.make_tensor(0, MemoryKind::kDeviceNoGpuDirect, 0, DataType::kFloat32,
                             {{1000}}, 40 + step);
    RecvRecord rec;
    c.recv(1, 0, "g", step, gpu, rec);
    ASSERT_TRUE(c.rdv(0).send("g", step, t).is_ok());
    c.sim().run();
    ASSERT_EQ(rec.calls, 1);
    ASSERT_TRUE(rec.status.is_ok()) << rec.status.to_string();
    EXPECT_EQ(rec.tensor.buffer.kind, MemoryKind::kDeviceNoGpuDirect);
    EXPECT_TRUE(c.check_same(1, rec.tensor, t, 40 + step).is_ok());
    c.rdv(1).release(rec.tensor);
  }
  // Per step: a staging copy at the sender, a proxy -> GPU copy at the receiver.
  EXPECT_EQ(c.rdv(0).stats().device_copies, 2u);
  EXPECT_EQ(c.rdv(1).stats().device_copies, 2u);
}

TEST(RdmaRendezvousTest, GpuDirectSteadyStateMakesNoCopies) {
  SimCluster c(two_nodes_with_gpus(true));
  const RecvArgs gpu{MemoryKind::kDeviceGpuDirect, 0};
  Tensor t = c.make_tensor(0, MemoryKind::kDeviceGpuDirect, 0, DataType::kBFloat16, {{512}}, 9);
  transfer_step(c, t, 1, 9, gpu);
  Counters first = Counters::of(c);
  EXPECT_EQ(first.p0.device_copies, 1u);  // the first time's GPU -> GPU clone
  transfer_step(c, t, 2, 10, gpu);
  Counters second = Counters::of(c);
  expect_steady_state_step(first, second, 1);
  transfer_step(c, t, 3, 11, gpu);
  expect_steady_state_step(second, Counters::of(c), 0);
}

TEST(RdmaRendezvousTest, AbortStepFailsPendingRecvAndAnswersLaterRequestsWithErrorStatus) {
  SimCluster c;
  // Receiver side: a pending Recv fails with the abort's status.
  RecvRecord pending;
  c.recv(1, 0, "x", 7, kHost, pending);
  c.sim().run();
  c.rdv(1).abort_step(7, Status(StatusCode::kAborted, "step 7 cancelled"));
  c.sim().run();
  ASSERT_EQ(pending.calls, 1);
  EXPECT_EQ(pending.status.code(), StatusCode::kAborted);
  // The withdrawal reached the sender, which dropped its parked response.
  EXPECT_EQ(c.rdv(0).pending_responses(), 0u);
  EXPECT_EQ(c.rdv(1).outstanding_requests(), 0u);

  // Sender side: after abort_step, a peer's request is answered with ERROR_STATUS.
  int send_done = 0;
  Status send_status;
  Tensor t = c.make_tensor(0, MemoryKind::kHostPinned, 0, DataType::kUInt8, {{10}}, 1);
  ASSERT_TRUE(c.rdv(0).send("y", 8, t, [&](Status st) {
                        ++send_done;
                        send_status = st;
                      }).is_ok());
  c.rdv(0).abort_step(8, Status(StatusCode::kAborted, "step 8 cancelled"));
  c.sim().run();
  EXPECT_EQ(send_done, 1);
  EXPECT_EQ(send_status.code(), StatusCode::kAborted);
  RecvRecord later;
  c.recv(1, 0, "y", 8, kHost, later);
  c.sim().run();
  ASSERT_EQ(later.calls, 1);
  EXPECT_EQ(later.status.code(), StatusCode::kAborted) << later.status.to_string();
  EXPECT_EQ(c.rdv(0).stats().error_statuses_sent, 2u);  // the withdrawal's answer + this one
  EXPECT_EQ(c.rdv(0).pending_responses(), 0u);
  EXPECT_EQ(c.rdv(1).outstanding_requests(), 0u);
  // A Send into an aborted step is refused.
  EXPECT_EQ(c.rdv(0).send("z", 8, t).code(), StatusCode::kAborted);
}

TEST(RdmaRendezvousTest, UnknownTensorOfAbortedStepGetsErrorStatusNamingTheTensor) {
  Cluster three;
  three.nodes = 3;
  SimCluster c(three);
  RecvRecord parked;
  c.recv(1, 0, "never_sent", 3, kHost, parked);  // parked at rank 0
  c.sim().run();
  EXPECT_EQ(c.rdv(0).pending_responses(), 1u);
  c.rdv(0).abort_step(3, Status(StatusCode::kAborted, "worker failed"));
  RecvRecord unknown;
  c.recv(2, 0, "also_never_sent", 3, kHost, unknown);
  c.sim().run();
  ASSERT_EQ(parked.calls, 1);
  EXPECT_EQ(parked.status.code(), StatusCode::kAborted);
  ASSERT_EQ(unknown.calls, 1);
  EXPECT_EQ(unknown.status.code(), StatusCode::kAborted);
  EXPECT_NE(unknown.status.message().find("also_never_sent"), std::string::npos)
      << unknown.status.message();
  EXPECT_EQ(c.rdv(0).pending_responses(), 0u);
}

// Takes every byte of simulated host address space a rank has left (timing-only
// mode holds no bytes, so this costs nothing), largest pieces first.
std::vector<Buffer> exhaust_host_memory(MemorySpace& memory) {
  std::vector<Buffer> hog;
  for (uint64_t bytes = 1ull << 42; bytes >= 256; bytes /= 2) {
    while (true) {
      Result<Buffer> b = memory.allocate(MemoryKind::kHostPinned, 0, bytes);
      if (!b.is_ok()) break;
      hog.push_back(*b);
    }
  }
  EXPECT_FALSE(memory.allocate(MemoryKind::kHostPinned, 0, 1).is_ok());
  return hog;
}

TEST(RdmaRendezvousTest, SenderAllocationFailureAnswersWithErrorStatus) {
  // Rank 0 holds the tensor on a GPU without GPUDirect, so serving it needs a
  // host staging buffer. With rank 0's host memory used up, that allocation
  // fails: rank 0 answers ERROR_STATUS and rank 1's Recv fails with the
  // reason, instead of waiting forever as the original implementation did.
  SimCluster c(two_nodes_with_gpus(/*gpu_direct=*/false), {}, /*payload=*/false);
  Tensor on_gpu = c.make_tensor(0, MemoryKind::kDeviceNoGpuDirect, 0, DataType::kFloat32,
                                {{1024}}, 9);
  MemorySpace& host0 = c.env(0).memory;
  std::vector<Buffer> hog = exhaust_host_memory(host0);
  RecvRecord rec;
  c.recv(1, 0, "weights", 1, kHost, rec);
  ASSERT_TRUE(c.rdv(0).send("weights", 1, on_gpu).is_ok());
  c.sim().run();
  ASSERT_EQ(rec.calls, 1);
  EXPECT_EQ(rec.status.code(), StatusCode::kResourceLimit) << rec.status.to_string();
  EXPECT_NE(rec.status.message().find("weights"), std::string::npos) << rec.status.message();
  EXPECT_EQ(c.rdv(0).stats().error_statuses_sent, 1u);
  EXPECT_EQ(c.rdv(0).pending_responses(), 0u);
  EXPECT_EQ(c.rdv(1).outstanding_requests(), 0u);
  for (const Buffer& b : hog) host0.free(b);
}

TEST(RdmaRendezvousTest, ControlMessagesWaitForASlotWhenNoMemoryIsLeftForMore) {
  // 40 requests parked at rank 0, then the step is aborted: rank 0 owes 40
  // ERROR_STATUS messages at once, more than its first chunk of message slots
  // holds, and it has no memory left for a second chunk. The rest must wait
  // for slots to come back, and every Recv must still fail, exactly once.
  SimCluster c({}, {}, /*payload=*/false);
  constexpr int kRequests = 40;
  std::vector<RecvRecord> recs(kRequests);
  for (int i = 0; i < kRequests; ++i) c.recv(1, 0, "t" + std::to_string(i), 7, kHost, recs[i]);
  c.sim().run();
  ASSERT_EQ(c.rdv(0).pending_responses(), static_cast<uint64_t>(kRequests));
  MemorySpace& host0 = c.env(0).memory;
  std::vector<Buffer> hog = exhaust_host_memory(host0);
  const uint64_t registrations = c.rdv(0).stats().registrations;
  c.rdv(0).abort_step(7, Status(StatusCode::kAborted, "worker failed"));
  c.sim().run();
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_EQ(recs[i].calls, 1) << i;
    EXPECT_EQ(recs[i].status.code(), StatusCode::kAborted) << recs[i].status.to_string();
  }
  EXPECT_EQ(c.rdv(0).stats().error_statuses_sent, static_cast<uint64_t>(kRequests));
  // No memory came from anywhere: the 24 beyond the first chunk waited for slots.
  EXPECT_EQ(c.rdv(0).stats().registrations, registrations);
  EXPECT_EQ(c.rdv(0).pending_responses(), 0u);
  EXPECT_EQ(c.rdv(1).outstanding_requests(), 0u);
  for (const Buffer& b : hog) host0.free(b);
}

TEST(RdmaRendezvousTest, FailSendAnswersTheRecvBeforeOrAfterItArrives) {
  SimCluster c;
  const Status why(StatusCode::kOutOfMemory, "no memory for the source");
  // Recv first: its request is parked at rank 0 when the Send fails.
  RecvRecord early;
  c.recv(1, 0, "a", 1, kHost, early);
  c.sim().run();
  ASSERT_EQ(c.rdv(0).pending_responses(), 1u);
  ASSERT_TRUE(c.rdv(0).fail_send("a", 1, why).is_ok());
  // Send fails first: the request that comes later is answered at once.
  ASSERT_TRUE(c.rdv(0).fail_send("b", 1, why).is_ok());
  RecvRecord late;
  c.recv(1, 0, "b", 1, kHost, late);
  c.sim().run();
  for (const RecvRecord* r : {&early, &late}) {
    ASSERT_EQ(r->calls, 1);
    EXPECT_EQ(r->status.code(), StatusCode::kOutOfMemory) << r->status.to_string();
    EXPECT_NE(r->status.message().find("no memory for the source"), std::string::npos)
        << r->status.message();
  }
  EXPECT_EQ(c.rdv(0).pending_responses(), 0u);
  EXPECT_EQ(c.rdv(1).outstanding_requests(), 0u);
  // A tensor already sent cannot be failed afterwards.
  Tensor t = c.make_tensor(0, MemoryKind::kHostPinned, 0, DataType::kFloat32, {{4}}, 1);
  ASSERT_TRUE(c.rdv(0).send("c", 1, t).is_ok());
  EXPECT_EQ(c.rdv(0).fail_send("c", 1, why).code(), StatusCode::kInvalidArgument);
}

TEST(RdmaRendezvousTest, RecvTimeoutFailsTheRequestAndCleansUpBothSides) {
  TfVerbsOptions options;
  options.request_timeout_ns = 1'000'000;
  SimCluster c({}, options);
  RecvRecord rec;
  c.recv(1, 0, "late", 1, kHost, rec);
  c.sim().run();
  ASSERT_EQ(rec.calls, 1);
  EXPECT_EQ(rec.status.code(), StatusCode::kAborted);
  EXPECT_GE(c.sim().now_ns(), 1'000'000);
  EXPECT_EQ(c.rdv(1).outstanding_requests(), 0u);
  EXPECT_EQ(c.rdv(0).pending_responses(), 0u);
  // A later Send of that tensor is simply never requested.
  Tensor t = c.make_tensor(0, MemoryKind::kHostPinned, 0, DataType::kUInt8, {{10}}, 1);
  ASSERT_TRUE(c.rdv(0).send("late", 1, t).is_ok());
  c.sim().run();
  EXPECT_EQ(rec.calls, 1);
}

TEST(RdmaRendezvousTest, RecvFromSelfOrUnknownRankFailsCleanly) {
  SimCluster c;
  RecvRecord self, nobody;
  c.recv(1, 1, "t", 1, kHost, self);
  c.recv(1, 9, "t", 1, kHost, nobody);
  c.sim().run();
  ASSERT_EQ(self.calls, 1);
  EXPECT_EQ(self.status.code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(nobody.calls, 1);
  EXPECT_EQ(nobody.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.rdv(1).outstanding_requests(), 0u);
}

TEST(RdmaRendezvousTest, BrokenQueuePairFailsPendingRecvExactlyOnceWithoutHanging) {
  SimCluster c;
  Tensor big = c.make_tensor(0, MemoryKind::kHostPinned, 0, DataType::kFloat32,
                             {{1 << 20}}, 5);  // 4 MiB: the write takes ~300 us
  RecvRecord rec, idle;
  c.recv(1, 0, "big", 1, kHost, rec);
  ASSERT_TRUE(c.rdv(0).send("big", 1, big).is_ok());
  c.recv(0, 1, "never", 1, kHost, idle);  // a request the other way, parked at rank 1
  // Run into the content write, then cut the connection.
  while (c.rdv(0).stats().content_writes == 0 && c.sim().step()) {
  }
  ASSERT_EQ(c.rdv(0).stats().content_writes, 1u);
  c.sim().break_queue_pair(0, 1);
  c.sim().run();
  ASSERT_EQ(rec.calls, 1);
  EXPECT_FALSE(rec.status.is_ok());
  EXPECT_TRUE(rec.status.code() == StatusCode::kQpError ||
              rec.status.code() == StatusCode::kPeerGone)
      << rec.status.to_string();
  ASSERT_EQ(idle.calls, 1);
  EXPECT_FALSE(idle.status.is_ok());
  for (RankId r : {0u, 1u}) {
    EXPECT_EQ(c.rdv(r).outstanding_requests(), 0u) << "rank " << r;
    EXPECT_EQ(c.rdv(r).pending_responses(), 0u) << "rank " << r;
  }
  // Later Recvs on the broken channel fail at once.
  RecvRecord after;
  c.recv(1, 0, "big", 2, kHost, after);
  c.sim().run();
  ASSERT_EQ(after.calls, 1);
  EXPECT_FALSE(after.status.is_ok());
}

TEST(RdmaRendezvousTest, WritesQueuedBehindAFullSendQueueAreSettledWhenTheChannelBreaks) {
  // A send queue of one: the second and later content writes wait in the
  // channel's queue, unseen by the NIC. When the queue pair breaks, no flush
  // completion comes for them; their responses must still be destroyed.
  Cluster config;
  config.send_queue_depth = 1;
  SimCluster c(config);
  constexpr int kTensors = 4;
  std::vector<Tensor> sent;
  for (int i = 0; i < kTensors; ++i) {
    sent.push_back(c.make_tensor(0, MemoryKind::kHostPinned, 0, DataType::kFloat32,
                                 {{1 << 20}}, 50 + i));  // 4 MiB each
  }
  std::vector<RecvRecord> warm(kTensors), recs(kTensors);
  for (int i = 0; i < kTensors; ++i) {  // step 1 fills the meta-data caches
    c.recv(1, 0, "t" + std::to_string(i), 1, kHost, warm[i]);
    ASSERT_TRUE(c.rdv(0).send("t" + std::to_string(i), 1, sent[i]).is_ok());
  }
  c.sim().run();
  for (int i = 0; i < kTensors; ++i) {
    ASSERT_TRUE(warm[i].status.is_ok()) << warm[i].status.to_string();
    c.rdv(1).release(warm[i].tensor);
  }
  const uint64_t writes_before = c.rdv(0).stats().content_writes;
  for (int i = 0; i < kTensors; ++i) {  // step 2: direct writes, one after another
    c.recv(1, 0, "t" + std::to_string(i), 2, kHost, recs[i]);
    ASSERT_TRUE(c.rdv(0).send("t" + std::to_string(i), 2, sent[i]).is_ok());
  }
  while (c.rdv(0).stats().content_writes < writes_before + 3 && c.sim().step()) {
  }
  ASSERT_GE(c.rdv(0).stats().content_writes, writes_before + 3);
  c.sim().break_queue_pair(0, 1);
  c.sim().run();
  for (int i = 0; i < kTensors; ++i) {
    ASSERT_EQ(recs[i].calls, 1) << i;
    if (recs[i].status.is_ok()) c.rdv(1).release(recs[i].tensor);
  }
  for (RankId r : {0u, 1u}) {
    EXPECT_EQ(c.rdv(r).outstanding_requests(), 0u) << "rank " << r;
    EXPECT_EQ(c.rdv(r).pending_responses(), 0u) << "rank " << r;
  }
}

// Rank `from` posts 64 bytes of garbage as a send straight at rank `to`'s
// control ring, bypassing its rendezvous (wr_id 0xDEAD is not an RdmaWriteID,
// so `from`'s rendezvous ignores the completion). The caller gives the buffer
// back with release_garbage.
struct Garbage {
  Buffer buffer;
  MemoryRegion region;
};
Garbage send_garbage(SimCluster& c, RankId from, RankId to) {
  RankEnv env = c.env(from);
  Result<Buffer> junk = env.memory.allocate(MemoryKind::kHostPinned, 0, 64);
  EXPECT_TRUE(junk.is_ok());
  if (!junk.is_ok()) return {};
  EXPECT_TRUE(
      env.memory.write_bytes(*junk, 0, std::vector<std::byte>(64, std::byte{0xEE})).is_ok());
  Result<MemoryRegion> mr = env.nic.register_memory(*junk, Access::kNone);
  EXPECT_TRUE(mr.is_ok());
  if (!mr.is_ok()) return {*junk, {}};
  SendWorkRequest wr;
  wr.wr_id = 0xDEAD;
  wr.opcode = WorkOpcode::kSend;
  wr.local = Sge{junk->addr, 64, mr->lkey};
  EXPECT_TRUE(env.nic.post_send(env.nic.queue_pair_to(to), wr).is_ok());
  return {*junk, *mr};
}

void release_garbage(SimCluster& c, RankId from, const Garbage& g) {
  RankEnv env = c.env(from);
  EXPECT_TRUE(env.nic.deregister_memory(g.region).is_ok());
  env.memory.free(g.buffer);
}

TEST(RdmaRendezvousTest, MalformedControlMessageClosesTheChannelWithACleanError) {
  SimCluster c;
  RecvRecord pending, other_way;
  c.recv(0, 1, "w", 1, kHost, pending);    // rank 0 waits on rank 1
  c.recv(1, 0, "v", 1, kHost, other_way);  // rank 1 waits on rank 0 (parked there)
  c.sim().run();
  // Rank 1's "NIC user" posts a send of garbage bytes straight at rank 0's ring.
  const Garbage garbage = send_garbage(c, 1, 0);
  c.sim().run();
  EXPECT_EQ(c.rdv(0).stats().malformed_messages, 1u);
  EXPECT_EQ(c.rdv(0).stats().channel_failures, 1u);
  ASSERT_EQ(pending.calls, 1);
  EXPECT_EQ(pending.status.code(), StatusCode::kMalformedMessage) << pending.status.to_string();
  EXPECT_EQ(c.rdv(0).outstanding_requests(), 0u);
  // Rank 0 answered the request it knew of before closing the channel.
  ASSERT_EQ(other_way.calls, 1);
  EXPECT_EQ(other_way.status.code(), StatusCode::kMalformedMessage)
      << other_way.status.to_string();
  EXPECT_EQ(c.rdv(0).pending_responses(), 0u);
  EXPECT_EQ(c.rdv(1).outstanding_requests(), 0u);
  EXPECT_GE(c.rdv(1).stats().unknown_completions, 1u);
  release_garbage(c, 1, garbage);
}

TEST(RdmaRendezvousTest, AChannelClosedForAMalformedMessageStillSendsItsQueuedAnswers) {
  // A send queue of one: of the 5 ERROR_STATUS answers rank 0 owes rank 1
  // when it closes the channel, 4 wait in the channel's queue. The queue pair
  // still works, so they must still go out: no Recv at rank 1 may hang.
  Cluster config;
  config.send_queue_depth = 1;
  SimCluster c(config);
  constexpr int kParked = 5;
  std::vector<RecvRecord> parked(kParked);
  for (int i = 0; i < kParked; ++i) c.recv(1, 0, "v" + std::to_string(i), 1, kHost, parked[i]);
  c.sim().run();
  ASSERT_EQ(c.rdv(0).pending_responses(), static_cast<uint64_t>(kParked));
  const Garbage garbage = send_garbage(c, 1, 0);
  c.sim().run();
  EXPECT_EQ(c.rdv(0).stats().channel_failures, 1u);
  for (int i = 0; i < kParked; ++i) {
    ASSERT_EQ(parked[i].calls, 1) << i;
    EXPECT_EQ(parked[i].status.code(), StatusCode::kMalformedMessage)
        << parked[i].status.to_string();
  }
  EXPECT_EQ(c.rdv(0).pending_responses(), 0u);
  EXPECT_EQ(c.rdv(1).outstanding_requests(), 0u);
  // Closed all the same: new work on it fails at once.
  RecvRecord after;
  c.recv(0, 1, "w", 2, kHost, after);
  c.sim().run();
  ASSERT_EQ(after.calls, 1);
  EXPECT_EQ(after.status.code(), StatusCode::kMalformedMessage);
  release_garbage(c, 1, garbage);
}

TEST(RdmaRendezvousTest, ManyConcurrentTensorsWithATinyRingAllArrive) {
  TfVerbsOptions options;
  options.control_ring_size = 2;  // receivers-not-ready: the NIC retries
  SimCluster c({}, options);
  constexpr int kTensors = 40;
  std::vector<RecvRecord> recs(kTensors);
  std::vector<Tensor> sent;
  for (int i = 0; i < kTensors; ++i) {
    sent.push_back(c.make_tensor(0, MemoryKind::kHostPinned, 0, DataType::kUInt8,
                                 {{100 + i}}, 1000 + i));
  }
  for (uint64_t step = 1; step <= 2; ++step) {
    for (int i = 0; i < kTensors; ++i) {
      recs[i] = RecvRecord{};
      c.recv(1, 0, "t" + std::to_string(i), step, kHost, recs[i]);
      ASSERT_TRUE(c.rdv(0).send("t" + std::to_string(i), step, sent[i]).is_ok());
    }
    c.sim().run();
    for (int i = 0; i < kTensors; ++i) {
      ASSERT_EQ(recs[i].calls, 1) << i;
      ASSERT_TRUE(recs[i].status.is_ok()) << recs[i].status.to_string();
      EXPECT_TRUE(c.check_same(1, recs[i].tensor, sent[i], 1000 + i).is_ok()) << i;
      c.rdv(1).release(recs[i].tensor);
    }
  }
}

TEST(RdmaRendezvousTest, TimingOnlyModeRunsTheSameProtocolWithoutPayload) {
  SimCluster c({}, {}, /*payload=*/false);
  ASSERT_FALSE(c.env(0).memory.holds_payload());
  Tensor t = c.make_tensor(0, MemoryKind::kHostPinned, 0, DataType::kFloat32, {{1 << 16}}, 1);
  Tensor s = SimCluster::make_string_tensor({{4}}, 2);
  for (uint64_t step = 1; step <= 3; ++step) {
    RecvRecord rec, str;
    c.recv(1, 0, "w", step, kHost, rec);
    c.recv(1, 0, "s", step, kHost, str);
    ASSERT_TRUE(c.rdv(0).send("w", step, t).is_ok());
    ASSERT_TRUE(c.rdv(0).send("s", step, s).is_ok());
    c.sim().run();
    ASSERT_EQ(rec.calls, 1);
    ASSERT_TRUE(rec.status.is_ok()) << rec.status.to_string();
    EXPECT_EQ(rec.tensor.shape, t.shape);
    ASSERT_EQ(str.calls, 1);
    ASSERT_TRUE(str.status.is_ok()) << str.status.to_string();
    EXPECT_EQ(str.tensor.strings.size(), 4u);  // sizes without bytes
    c.rdv(1).release(rec.tensor);
  }
  EXPECT_EQ(c.rdv(0).stats().meta_data_updates_sent, 2u);  // first step only, per tensor
  EXPECT_EQ(c.rdv(0).stats().content_writes, 6u);
}

}  // namespace
}  // namespace tensorwire::tf_verbs
