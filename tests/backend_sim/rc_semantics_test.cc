// Reliable-connected semantics: receiver-not-ready, remote access errors,
// local protection, flush, send queue depth, order, faults.
#include <gtest/gtest.h>

#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

const Access kRw = Access::kLocalWrite | Access::kRemoteWrite;

Cluster two_nodes() {
  Cluster c;
  c.nodes = 2;
  return c;
}

TEST(RcSemantics, SendLandsInThePostedReceiveWithItsBytes) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 64, Access::kNone);
  MemoryRegion dst = f.region(1, 128, Access::kLocalWrite);
  std::vector<std::byte> msg(64);
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = std::byte(i);
  ASSERT_TRUE(f.env(0).memory.write_bytes(f.buffer_of(src), 0, msg).is_ok());
  ASSERT_TRUE(f.recv(1, 0, dst, 128, 77).is_ok());
  ASSERT_TRUE(f.send(0, 1, src, 64, 5).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(1).size(), 1u);
  const Completion& c = f.completions(1)[0].completion;
  EXPECT_EQ(c.status, CompletionStatus::kSuccess);
  EXPECT_EQ(c.opcode, CompletionOpcode::kRecv);
  EXPECT_EQ(c.wr_id, 77u);
  EXPECT_EQ(c.byte_len, 64u);
  EXPECT_EQ(c.peer, 0u);
  std::vector<std::byte> got(64);
  ASSERT_TRUE(f.env(1).memory.read_bytes(f.buffer_of(dst), 0, got).is_ok());
  EXPECT_EQ(got, msg);
  ASSERT_EQ(f.completions(0).size(), 1u);
  EXPECT_EQ(f.completions(0)[0].completion.wr_id, 5u);
  EXPECT_EQ(f.completions(0)[0].completion.opcode, CompletionOpcode::kSend);
  EXPECT_EQ(f.sim().stats(0).sends, 1u);
}

TEST(RcSemantics, ReceiverNotReadyRetriesUntilAReceiveIsPosted) {
  Cluster c = two_nodes();
  c.rnr_delay_ns = 10'000;
  SimFixture f(c);
  MemoryRegion src = f.region(0, 64, Access::kNone);
  MemoryRegion dst = f.region(1, 64, Access::kLocalWrite);
  ASSERT_TRUE(f.send(0, 1, src, 64).is_ok());
  f.sim().run_until(f.sim().now_ns() + 35'000);
  EXPECT_TRUE(f.completions(1).empty());
  EXPECT_GE(f.sim().stats(0).rnr_retries, 3u);
  ASSERT_TRUE(f.recv(1, 0, dst, 64).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(1).size(), 1u);
  EXPECT_EQ(f.completions(1)[0].completion.status, CompletionStatus::kSuccess);
  EXPECT_EQ(f.completions(0)[0].completion.status, CompletionStatus::kSuccess);
}

TEST(RcSemantics, ReceiverNotReadyWithFiniteRetriesFailsAndBreaksTheQp) {
  Cluster c = two_nodes();
  c.rnr_retry_count = 2;
  SimFixture f(c);
  MemoryRegion src = f.region(0, 64, Access::kNone);
  ASSERT_TRUE(f.send(0, 1, src, 64, 1).is_ok());
  ASSERT_TRUE(f.send(0, 1, src, 64, 2).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 2u);
  EXPECT_EQ(f.completions(0)[0].completion.status, CompletionStatus::kRnrRetryExceeded);
  EXPECT_EQ(f.completions(0)[0].completion.wr_id, 1u);
  EXPECT_EQ(f.completions(0)[1].completion.status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(f.env(0).nic.queue_pair_state(f.env(0).nic.queue_pair_to(1)), QpState::kError);
  EXPECT_EQ(f.send(0, 1, src, 64).code(), StatusCode::kQpError);
  EXPECT_EQ(f.sim().stats(0).completions_error, 2u);
}

struct BadWrite {
  const char* name;
  int case_id;
};

class RemoteAccessError : public ::testing::TestWithParam<BadWrite> {};

TEST_P(RemoteAccessError, FailsTheWriteMovesBothEndsToErrorAndFlushes) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 4096, Access::kNone);
  MemoryRegion dst = f.region(1, 1024, kRw);
  MemoryRegion read_only = f.region(1, 1024, Access::kRemoteRead);
  ASSERT_TRUE(f.recv(1, 0, dst, 0, 33).is_ok());  // flushed when the QP breaks
  MemoryRegion target = dst;
  uint32_t bytes = 512;
  switch (GetParam().case_id) {
    case 0: target.rkey += 1000; break;                    // bad rkey
    case 1: bytes = 2048; break;                           // beyond the region
    case 2: target = read_only; break;                     // no remote-write right
    case 3: ASSERT_TRUE(f.env(1).nic.deregister_memory(dst).is_ok()); break;
    case 4: target.addr = dst.addr + 1000; break;          // starts inside, ends outside
  }
  ASSERT_TRUE(f.write(0, 1, src, target, bytes, 1).is_ok());
  ASSERT_TRUE(f.write(0, 1, src, dst, 16, 2).is_ok());  // queued behind: flushed
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 2u);
  EXPECT_EQ(f.completions(0)[0].completion.wr_id, 1u);
  EXPECT_EQ(f.completions(0)[0].completion.status, CompletionStatus::kRemoteAccessError);
  EXPECT_EQ(f.completions(0)[1].completion.wr_id, 2u);
  EXPECT_EQ(f.completions(0)[1].completion.status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(f.env(0).nic.queue_pair_state(f.env(0).nic.queue_pair_to(1)), QpState::kError);
  EXPECT_EQ(f.env(1).nic.queue_pair_state(f.env(1).nic.queue_pair_to(0)), QpState::kError);
  ASSERT_EQ(f.completions(1).size(), 1u);
  EXPECT_EQ(f.completions(1)[0].completion.wr_id, 33u);
  EXPECT_EQ(f.completions(1)[0].completion.status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(f.sim().stats(0).rdma_writes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Cases, RemoteAccessError,
                         ::testing::Values(BadWrite{"BadRkey", 0}, BadWrite{"OutOfBounds", 1},
                                           BadWrite{"MissingRight", 2},
                                           BadWrite{"Deregistered", 3},
                                           BadWrite{"StraddlesTheEnd", 4}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RcSemantics, BadLkeyIsALocalProtectionError) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 64, Access::kNone);
  MemoryRegion dst = f.region(1, 64, kRw);
  src.lkey += 999;
  ASSERT_TRUE(f.write(0, 1, src, dst, 64).is_ok());  // posting succeeds, as on an HCA
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 1u);
  EXPECT_EQ(f.completions(0)[0].completion.status, CompletionStatus::kLocalProtectionError);
}

TEST(RcSemantics, ReadIntoRegionWithoutLocalWriteIsALocalProtectionError) {
  SimFixture f(two_nodes());
  MemoryRegion local = f.region(0, 64, Access::kNone);
  MemoryRegion remote = f.region(1, 64, Access::kRemoteRead);
  SendWorkRequest wr;
  wr.opcode = WorkOpcode::kRdmaRead;
  wr.local = {local.addr, 64, local.lkey};
  wr.remote_addr = remote.addr;
  wr.rkey = remote.rkey;
  ASSERT_TRUE(f.env(0).nic.post_send(f.env(0).nic.queue_pair_to(1), wr).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 1u);
  EXPECT_EQ(f.completions(0)[0].completion.status, CompletionStatus::kLocalProtectionError);
}

TEST(RcSemantics, SendLargerThanTheReceiveIsALengthError) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 256, Access::kNone);
  MemoryRegion dst = f.region(1, 256, Access::kLocalWrite);
  ASSERT_TRUE(f.recv(1, 0, dst, 16, 4).is_ok());
  ASSERT_TRUE(f.send(0, 1, src, 256).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(1).size(), 1u);
  EXPECT_EQ(f.completions(1)[0].completion.status, CompletionStatus::kLocalLengthError);
  ASSERT_EQ(f.completions(0).size(), 1u);
  EXPECT_NE(f.completions(0)[0].completion.status, CompletionStatus::kSuccess);
}

TEST(RcSemantics, PostingBeyondTheSendQueueDepthIsNoResource) {
  Cluster c = two_nodes();
  c.send_queue_depth = 4;
  SimFixture f(c);
  MemoryRegion src = f.region(0, 64, Access::kNone);
  MemoryRegion dst = f.region(1, 64, kRw);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(f.write(0, 1, src, dst, 64, i).is_ok());
  EXPECT_EQ(f.write(0, 1, src, dst, 64, 4).code(), StatusCode::kNoResource);
  f.sim().run();
  EXPECT_EQ(f.completions(0).size(), 4u);
  EXPECT_TRUE(f.write(0, 1, src, dst, 64, 5).is_ok());  // room again after completions
}

TEST(RcSemantics, OneQueuePairCompletesInPostingOrder) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 1 << 20, Access::kNone);
  MemoryRegion dst = f.region(1, 1 << 20, kRw);
  for (uint64_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(f.recv(1, 0, dst, 0, 100 + i).is_ok());
    // Sizes shrink: a model that let later small writes overtake would reorder.
    ASSERT_TRUE(f.write(0, 1, src, dst, static_cast<uint32_t>((20 - i) * 4096), i, true,
                        static_cast<uint32_t>(i))
                    .is_ok());
  }
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 20u);
  ASSERT_EQ(f.completions(1).size(), 20u);
  for (uint64_t i = 0; i < 20; ++i) {
    EXPECT_EQ(f.completions(0)[i].completion.wr_id, i);
    EXPECT_EQ(f.completions(1)[i].completion.imm_data, i);
    EXPECT_EQ(f.completions(1)[i].completion.wr_id, 100 + i);
  }
}

TEST(RcSemantics, ZeroLengthWriteWithImmNeedsNoValidRkey) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 64, Access::kNone);
  MemoryRegion dst = f.region(1, 64, kRw);
  ASSERT_TRUE(f.recv(1, 0, dst, 0, 1).is_ok());
  MemoryRegion nowhere{};
  ASSERT_TRUE(f.write(0, 1, src, nowhere, 0, 1, true, 9).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(1).size(), 1u);
  EXPECT_EQ(f.completions(1)[0].completion.status, CompletionStatus::kSuccess);
  EXPECT_EQ(f.completions(1)[0].completion.byte_len, 0u);
}

TEST(RcSemantics, BrokenQueuePairFlushesBothEnds) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 1 << 20, Access::kNone);
  MemoryRegion dst = f.region(1, 1 << 20, kRw);
  ASSERT_TRUE(f.recv(1, 0, dst, 0, 1).is_ok());
  ASSERT_TRUE(f.recv(0, 1, src, 0, 2).is_ok());
  ASSERT_TRUE(f.write(0, 1, src, dst, 1 << 20, 3).is_ok());
  f.sim().run_until(f.sim().now_ns() + 1000);
  f.sim().break_queue_pair(0, 1);
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 2u);
  for (const Recorded& r : f.completions(0)) {
    EXPECT_EQ(r.completion.status, CompletionStatus::kWorkRequestFlushed);
  }
  ASSERT_EQ(f.completions(1).size(), 1u);
  EXPECT_EQ(f.completions(1)[0].completion.status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(f.sim().stats(0).rdma_writes, 0u);
}

TEST(RcSemantics, CrashedRankSilencesItselfAndFailsItsPeers) {
  Cluster c;
  c.nodes = 3;
  SimFixture f(c);
  MemoryRegion src = f.region(0, 1 << 20, Access::kNone);
  MemoryRegion dst = f.region(1, 1 << 20, kRw);
  ASSERT_TRUE(f.write(0, 1, src, dst, 1 << 20, 1).is_ok());
  f.sim().run_until(f.sim().now_ns() + 1000);
  f.sim().crash_rank(1);
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 1u);
  EXPECT_EQ(f.completions(0)[0].completion.status, CompletionStatus::kRetryExceeded);
  EXPECT_TRUE(f.completions(1).empty());
  EXPECT_EQ(f.env(2).nic.queue_pair_state(f.env(2).nic.queue_pair_to(1)), QpState::kError);
  EXPECT_EQ(f.env(2).nic.queue_pair_state(f.env(2).nic.queue_pair_to(0)), QpState::kReadyToSend);
}

TEST(RcSemantics, BadQueuePairHandleIsRejected) {
  SimFixture f(two_nodes());
  SendWorkRequest wr;
  EXPECT_EQ(f.env(0).nic.post_send(QpHandle{0}, wr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.env(0).nic.post_send(QpHandle{1}, wr).code(), StatusCode::kInvalidArgument);  // itself
  EXPECT_EQ(f.env(0).nic.post_send(QpHandle{9}, wr).code(), StatusCode::kInvalidArgument);
  wr.opcode = static_cast<WorkOpcode>(200);
  EXPECT_EQ(f.env(0).nic.post_send(f.env(0).nic.queue_pair_to(1), wr).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tensorwire::sim::testing
