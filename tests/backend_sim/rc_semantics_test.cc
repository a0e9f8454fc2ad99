// Reliable-connected semantics only the simulator has: receiver-not-ready
// retries in simulated time, its fault injection (a broken queue pair, a
// crashed rank). The NIC contract's semantics both backends share (order,
// length, protection and access errors, flushes, queue depth, RNR without
// retries) are the conformance suite's: tests/nic_conformance/.
#include <vector>

#include <gtest/gtest.h>

#include "backend_sim/sim_memory.h"
#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

const Access kRw = Access::kLocalWrite | Access::kRemoteWrite;

Cluster two_nodes() {
  Cluster c;
  c.nodes = 2;
  return c;
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

// The retry count is honoured: two retries, a delay apart, before the send
// fails (what follows a failure is the conformance suite's).
TEST(RcSemantics, ReceiverNotReadyFailsOnlyAfterItsFiniteRetries) {
  Cluster c = two_nodes();
  c.rnr_retry_count = 2;
  c.rnr_delay_ns = 10'000;
  SimFixture f(c);
  MemoryRegion src = f.region(0, 64, Access::kNone);
  ASSERT_TRUE(f.send(0, 1, src, 64, 1).is_ok());
  while (f.sim().stats(0).rnr_retries == 0) ASSERT_TRUE(f.sim().step());
  const TimeNs first_try_ns = f.sim().now_ns();
  f.sim().run_until(first_try_ns + 15'000);  // one retry done, one to go
  EXPECT_TRUE(f.completions(0).empty());
  EXPECT_EQ(f.sim().stats(0).rnr_retries, 2u);
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 1u);
  EXPECT_EQ(f.completions(0)[0].completion.status, CompletionStatus::kRnrRetryExceeded);
  EXPECT_GE(f.completions(0)[0].at_ns, first_try_ns + 20'000);
  EXPECT_EQ(f.sim().stats(0).rnr_retries, 3u);
  EXPECT_EQ(f.sim().stats(0).completions_error, 1u);
}

// The NIC reads a write's source when the request goes on the wire; the
// bytes land later. A large source is not copied then (copy-on-write,
// SimMemorySpace::hold_read): a change to it, or its free, before the bytes
// land copies it aside first, so the receiver always gets the bytes as they
// were when read; a source left alone is never copied.
class HeldWrite {
 public:
  explicit HeldWrite(uint32_t bytes) : f_(slow_wire()), bytes_(bytes) {
    src_ = f_.region(0, bytes, Access::kNone);
    dst_ = f_.region(1, bytes, kRw);
    std::vector<std::byte> content(bytes);
    for (uint32_t i = 0; i < bytes; ++i) content[i] = static_cast<std::byte>(i * 7 + 1);
    EXPECT_TRUE(f_.env(0).memory.write_bytes(f_.buffer_of(src_), 0, content).is_ok());
    sent_ = content;
    EXPECT_TRUE(f_.write(0, 1, src_, dst_, bytes).is_ok());
    // On the wire (the NIC read the source at once: registration is free
    // here), not landed (a millisecond of latency).
    f_.sim().run_until(f_.sim().now_ns() + 1000);
  }
  static Cluster slow_wire() {
    Cluster c = two_nodes();
    c.registration_base_ns = 0;
    c.registration_per_page_ns = 0;
    c.nic_latency_ns = 1000 * 1000;
    return c;
  }
  SimFixture& f() { return f_; }
  Buffer source() { return f_.buffer_of(src_); }
  std::vector<std::byte> landed() {
    f_.sim().run();
    std::vector<std::byte> got(bytes_);
    EXPECT_TRUE(f_.env(1).memory.read_bytes(f_.buffer_of(dst_), 0, got).is_ok());
    return got;
  }
  uint64_t copied() { return dynamic_cast<SimMemorySpace&>(f_.env(0).memory).held_reads_copied(); }
  const std::vector<std::byte>& sent() const { return sent_; }

 private:
  SimFixture f_;
  uint32_t bytes_;
  MemoryRegion src_;
  MemoryRegion dst_;
  std::vector<std::byte> sent_;
};

TEST(RcSemantics, AWriteDeliversItsSourceAsTheNicReadItWithoutCopyingIt) {
  HeldWrite w(1 << 20);
  EXPECT_EQ(w.landed(), w.sent());
  EXPECT_EQ(w.copied(), 0u) << "a source nobody touched is read in place";
}

TEST(RcSemantics, ASourceOverwrittenWhileOnTheWireStillDeliversWhatWasRead) {
  HeldWrite w(1 << 20);
  const std::vector<std::byte> scribble(1 << 20, std::byte{0xa5});
  ASSERT_TRUE(w.f().env(0).memory.write_bytes(w.source(), 0, scribble).is_ok());
  EXPECT_EQ(w.landed(), w.sent());
  EXPECT_EQ(w.copied(), 1u);
}

TEST(RcSemantics, ASourceFreedWhileOnTheWireStillDeliversWhatWasRead) {
  HeldWrite w(1 << 20);
  w.f().env(0).memory.free(w.source());
  EXPECT_EQ(w.landed(), w.sent());
  EXPECT_EQ(w.copied(), 1u);
}

TEST(RcSemantics, ASmallSourceIsCopiedWhenReadAndStaysAsRead) {
  HeldWrite w(4096);
  const std::vector<std::byte> scribble(4096, std::byte{0xa5});
  ASSERT_TRUE(w.f().env(0).memory.write_bytes(w.source(), 0, scribble).is_ok());
  EXPECT_EQ(w.landed(), w.sent());
  EXPECT_EQ(w.copied(), 0u) << "copied when read, not on the write";
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

// Rank 0's 1 MiB source, the same range under an lkey that names no region
// (the NIC cannot read it), and rank 1's landing region.
struct WriteRegions {
  explicit WriteRegions(SimFixture& f)
      : src(f.region(0, 1 << 20, Access::kNone)), dst(f.region(1, 1 << 20, kRw)), unregistered(src) {
    unregistered.lkey = 0;
  }
  MemoryRegion src;
  MemoryRegion dst;
  MemoryRegion unregistered;
};

// A QP's error flushes its outstanding sends and posted receives as one
// event (one poll of the CQ returns the batch), after the completions
// already scheduled and in posting order: the failing request's status
// first, then the flushed sends, then the flushed receives. What the handler
// posts meanwhile meets a QP in error.
TEST(RcSemantics, AQueuePairErrorFlushesItsWorkAsOneBatchInPostingOrder) {
  SimFixture f(two_nodes());
  const auto [src, dst, unregistered] = WriteRegions(f);
  constexpr uint64_t kReceives = 5;
  for (uint64_t i = 0; i < kReceives; ++i) ASSERT_TRUE(f.recv(0, 1, src, 0, 100 + i).is_ok());
  ASSERT_TRUE(f.write(0, 1, src, dst, 1 << 20, 1).is_ok());
  ASSERT_TRUE(f.write(0, 1, unregistered, dst, 64, 2).is_ok());
  ASSERT_TRUE(f.write(0, 1, src, dst, 64, 3).is_ok());
  ASSERT_TRUE(f.write(0, 1, src, dst, 64, 4).is_ok());
  std::vector<Status> posts_in_batch;
  // A copy: clang 14 cannot capture a structured binding.
  const auto flushed_into = dst;
  f.env(0).nic.set_completion_handler([&f, &posts_in_batch, flushed_into](const Completion& c) {
    f.completions(0).push_back({f.sim().now_ns(), c});
    if (c.status == CompletionStatus::kWorkRequestFlushed) {
      posts_in_batch.push_back(f.recv(0, 1, flushed_into, 0, 999));
    }
  });
  f.sim().run();
  // 1 succeeds; 2 fails the NIC's check and moves the QP to error; the
  // batch flushes 3, 4 and the five receives.
  const std::vector<Recorded>& got = f.completions(0);
  ASSERT_EQ(got.size(), 4u + kReceives);
  EXPECT_EQ(got[0].completion.wr_id, 1u);
  EXPECT_EQ(got[0].completion.status, CompletionStatus::kSuccess);
  EXPECT_EQ(got[1].completion.wr_id, 2u);
  EXPECT_EQ(got[1].completion.status, CompletionStatus::kLocalProtectionError);
  std::vector<uint64_t> flushed_ids;
  for (size_t i = 2; i < got.size(); ++i) {
    EXPECT_EQ(got[i].completion.status, CompletionStatus::kWorkRequestFlushed) << i;
    EXPECT_EQ(got[i].completion.peer, 1u) << i;
    EXPECT_EQ(got[i].at_ns, got[2].at_ns) << "one event hands over the batch: " << i;
    flushed_ids.push_back(got[i].completion.wr_id);
  }
  EXPECT_GT(got[2].at_ns, got[1].at_ns);
  EXPECT_EQ(flushed_ids, (std::vector<uint64_t>{3, 4, 100, 101, 102, 103, 104}));
  EXPECT_EQ(got[2].completion.opcode, CompletionOpcode::kRdmaWrite);
  EXPECT_EQ(got.back().completion.opcode, CompletionOpcode::kRecv);
  ASSERT_EQ(posts_in_batch.size(), 2u + kReceives);
  for (const Status& s : posts_in_batch) EXPECT_EQ(s.code(), StatusCode::kQpError) << s.to_string();
}

// Without outstanding sends, the first flushed receive is just flushed; a
// break flushes both ends, each as one event of its own rank.
TEST(RcSemantics, ABrokenPairFlushesEachEndsReceivesAsOneEvent) {
  SimFixture f(two_nodes());
  MemoryRegion a = f.region(0, 4096, kRw);
  MemoryRegion b = f.region(1, 4096, kRw);
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(f.recv(0, 1, a, 64, 10 + i).is_ok());
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(f.recv(1, 0, b, 64, 20 + i).is_ok());
  f.sim().run();
  const uint64_t before = f.sim().events_processed();
  f.sim().break_queue_pair(0, 1);
  f.sim().run();
  EXPECT_EQ(f.sim().events_processed() - before, 2u);
  ASSERT_EQ(f.completions(0).size(), 3u);
  ASSERT_EQ(f.completions(1).size(), 4u);
  for (RankId r : {0u, 1u}) {
    for (size_t i = 0; i < f.completions(r).size(); ++i) {
      const Completion& c = f.completions(r)[i].completion;
      EXPECT_EQ(c.wr_id, (r == 0 ? 10u : 20u) + i);
      EXPECT_EQ(c.status, CompletionStatus::kWorkRequestFlushed);
      EXPECT_EQ(c.opcode, CompletionOpcode::kRecv);
      EXPECT_EQ(f.completions(r)[i].at_ns, f.completions(r)[0].at_ns);
    }
  }
}

// A crashed peer fails the first outstanding request with the error its
// retries ran into; the batch flushes the rest behind it.
TEST(RcSemantics, ACrashedPeersBatchStartsWithTheRetryError) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 1 << 20, Access::kNone);
  MemoryRegion dst = f.region(1, 1 << 20, kRw);
  ASSERT_TRUE(f.recv(0, 1, src, 0, 7).is_ok());
  for (uint64_t id = 1; id <= 3; ++id) ASSERT_TRUE(f.write(0, 1, src, dst, 1 << 20, id).is_ok());
  f.sim().run_until(f.sim().now_ns() + 1000);
  f.sim().crash_rank(1);
  f.sim().run();
  const std::vector<Recorded>& got = f.completions(0);
  ASSERT_EQ(got.size(), 4u);
  const std::vector<CompletionStatus> statuses = {
      CompletionStatus::kRetryExceeded, CompletionStatus::kWorkRequestFlushed,
      CompletionStatus::kWorkRequestFlushed, CompletionStatus::kWorkRequestFlushed};
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].completion.wr_id, i < 3 ? i + 1 : 7u) << i;
    EXPECT_EQ(got[i].completion.status, statuses[i]) << i;
    EXPECT_EQ(got[i].at_ns, got[0].at_ns) << i;
  }
  EXPECT_TRUE(f.completions(1).empty());
}

// A queue pair's requests complete in posting order, errors included: a
// request the NIC cannot read (here an lkey that names no region) while the
// one ahead of it is still on its way completes after that one, and nothing
// behind it goes on the wire. (Before, its error completion overtook the
// request ahead, which was then flushed after it and never landed.)
TEST(RcSemantics, ALocalErrorBehindARequestInFlightCompletesAfterIt) {
  SimFixture f(two_nodes());
  const auto [src, dst, unregistered] = WriteRegions(f);
  ASSERT_TRUE(f.write(0, 1, src, dst, 1 << 20, 1).is_ok());
  ASSERT_TRUE(f.write(0, 1, unregistered, dst, 64, 2).is_ok());
  ASSERT_TRUE(f.write(0, 1, src, dst, 64, 3).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 3u);
  EXPECT_EQ(f.completions(0)[0].completion.wr_id, 1u);
  EXPECT_EQ(f.completions(0)[0].completion.status, CompletionStatus::kSuccess);
  EXPECT_EQ(f.completions(0)[1].completion.wr_id, 2u);
  EXPECT_EQ(f.completions(0)[1].completion.status, CompletionStatus::kLocalProtectionError);
  EXPECT_EQ(f.completions(0)[2].completion.wr_id, 3u);
  EXPECT_EQ(f.completions(0)[2].completion.status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(f.sim().stats(0).rdma_writes, 1u);
  EXPECT_EQ(f.env(0).nic.queue_pair_state(f.env(0).nic.queue_pair_to(1)), QpState::kError);
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

}  // namespace
}  // namespace tensorwire::sim::testing
