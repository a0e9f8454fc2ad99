// The NIC conformance suite: the behaviours of the abstract NIC (core/nic.h)
// as one typed test body each, written once against core/ only and run over
// every backend's NIC cluster fixture (nic_cluster.h): the simulator always
// (tests/nic_conformance/), the verbs NIC on an RDMA device (tests/backend_verbs/).
//
// Instantiate in a test file with
//   INSTANTIATE_TYPED_TEST_SUITE_P(Backend, NicConformance, ::testing::Types<MyCluster>);
// A fixture whose unavailable_reason() is not empty skips every case with it.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tests/nic_conformance/nic_cluster.h"

namespace tensorwire {

// Statuses and opcodes by name in failure messages.
inline void PrintTo(CompletionStatus s, std::ostream* os) { *os << completion_status_name(s); }
inline void PrintTo(CompletionOpcode o, std::ostream* os) { *os << completion_opcode_name(o); }
inline void PrintTo(StatusCode c, std::ostream* os) { *os << status_code_name(c); }
inline void PrintTo(QpState s, std::ostream* os) {
  *os << (s == QpState::kReadyToSend ? "ready to send" : "error");
}

namespace nic_conformance {

#define NIC_ASSERT_OK(expr)                                                 \
  do {                                                                      \
    const ::tensorwire::Status nic_status_ = (expr);                        \
    ASSERT_TRUE(nic_status_.is_ok()) << #expr << ": " << nic_status_.to_string(); \
  } while (0)

inline std::vector<std::byte> zeros(size_t length) { return std::vector<std::byte>(length); }

template <typename Cluster>
class NicConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = Cluster::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << Cluster::kBackend << ": " << why;
  }
};

TYPED_TEST_SUITE_P(NicConformance);

// The checks behind every remote access error: the failing request (wr_id 1)
// and the one queued behind it (wr_id 2) on the requester, both ends broken,
// the responder's posted receive (wr_id 33) flushed, no byte moved.
template <typename Cluster>
void expect_remote_access_error(NicRig<Cluster>& rig, CompletionOpcode failed_opcode,
                                const MemoryRegion& target, const MemoryRegion& behind) {
  ASSERT_TRUE(rig.progress_until_counts({2, 1})) << rig.diagnostics(0) << rig.diagnostics(1);
  const Completion* bad = rig.completion(0, 1);
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->status, CompletionStatus::kRemoteAccessError) << rig.diagnostics(0);
  EXPECT_EQ(bad->opcode, failed_opcode);
  EXPECT_EQ(bad->peer, 1u);
  EXPECT_EQ(bad->qp, rig.qp(0, 1));
  const Completion* next = rig.completion(0, 2);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(next->opcode, CompletionOpcode::kRdmaWrite);  // a flush keeps its own opcode
  EXPECT_EQ(rig.completions(0).front().wr_id, 1u);        // the failure comes first
  EXPECT_EQ(rig.state(0, 1), QpState::kError);
  EXPECT_EQ(rig.post(0, 1, WorkOpcode::kSend, Sge{}, 3).code(), StatusCode::kQpError);
  // The responder's end breaks too (an IBA class C error): its receive is flushed.
  EXPECT_EQ(rig.completions(1)[0].wr_id, 33u);
  EXPECT_EQ(rig.completions(1)[0].status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(rig.completions(1)[0].opcode, CompletionOpcode::kRecv);
  EXPECT_EQ(rig.state(1, 0), QpState::kError);
  EXPECT_EQ(rig.read(1, target, 0, target.length), zeros(target.length));
  EXPECT_EQ(rig.read(1, behind, 0, behind.length), zeros(behind.length));
}

TYPED_TEST_P(NicConformance, SendLandsInAPostedReceiveByteForByte) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  // Least rights: the NIC only reads a send's source.
  MemoryRegion src = rig.region(0, 4096, Access::kNone);
  MemoryRegion dst = rig.region(1, 8192, Access::kLocalWrite);
  const std::vector<std::byte> sent = rig.fill(0, src, 1);
  NIC_ASSERT_OK(rig.post_recv(1, 0, sge_of(dst, 0, 8192), 77));
  NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 4096), 5));
  ASSERT_TRUE(rig.progress_until_counts({1, 1}));

  const Completion& r = rig.completions(1)[0];
  EXPECT_EQ(r.status, CompletionStatus::kSuccess) << rig.diagnostics(1);
  EXPECT_EQ(r.opcode, CompletionOpcode::kRecv);
  EXPECT_EQ(r.wr_id, 77u);
  EXPECT_EQ(r.byte_len, 4096u);
  EXPECT_EQ(r.peer, 0u);
  EXPECT_EQ(r.qp, rig.qp(1, 0));
  EXPECT_FALSE(r.has_imm);
  EXPECT_EQ(rig.read(1, dst, 0, 4096), sent);
  EXPECT_EQ(rig.read(1, dst, 4096, 4096), zeros(4096));

  const Completion& s = rig.completions(0)[0];
  EXPECT_EQ(s.status, CompletionStatus::kSuccess) << rig.diagnostics(0);
  EXPECT_EQ(s.opcode, CompletionOpcode::kSend);
  EXPECT_EQ(s.wr_id, 5u);
  EXPECT_EQ(s.byte_len, 4096u);
  EXPECT_EQ(s.peer, 1u);
  EXPECT_EQ(s.qp, rig.qp(0, 1));
  EXPECT_EQ(rig.state(0, 1), QpState::kReadyToSend);
  EXPECT_EQ(rig.state(1, 0), QpState::kReadyToSend);
}

// Sends and writes-with-imm alternate, each smaller than the last: a NIC that
// let a later, shorter request overtake would reorder the completions.
TYPED_TEST_P(NicConformance, OneQueuePairCompletesInPostingOrder) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  constexpr uint32_t kRequests = 12;
  auto size_of = [](uint32_t i) { return (kRequests - i) * 1024; };
  auto offset_of = [&](uint32_t i) {
    uint64_t offset = 0;
    for (uint32_t j = 0; j < i; ++j) offset += size_of(j);
    return offset;
  };
  const uint64_t total = offset_of(kRequests);
  MemoryRegion src = rig.region(0, total, Access::kNone);
  MemoryRegion dst = rig.region(1, total, Access::kLocalWrite | Access::kRemoteWrite);
  const std::vector<std::byte> sent = rig.fill(0, src, 2);
  for (uint32_t i = 0; i < kRequests; ++i) {
    NIC_ASSERT_OK(rig.post_recv(1, 0, sge_of(dst, offset_of(i), size_of(i)), 100 + i));
  }
  for (uint32_t i = 0; i < kRequests; ++i) {
    const Sge piece = sge_of(src, offset_of(i), size_of(i));
    NIC_ASSERT_OK(i % 2 == 0 ? rig.post(0, 1, WorkOpcode::kSend, piece, i)
                             : rig.post_to(0, 1, WorkOpcode::kRdmaWriteWithImm, piece, i, dst,
                                           offset_of(i), 1000 + i));
  }
  ASSERT_TRUE(rig.progress_until_counts({kRequests, kRequests}));
  for (uint32_t i = 0; i < kRequests; ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const bool send = i % 2 == 0;
    const Completion& s = rig.completions(0)[i];
    EXPECT_EQ(s.wr_id, i);
    EXPECT_EQ(s.status, CompletionStatus::kSuccess);
    EXPECT_EQ(s.opcode, send ? CompletionOpcode::kSend : CompletionOpcode::kRdmaWrite);
    const Completion& r = rig.completions(1)[i];
    EXPECT_EQ(r.wr_id, 100 + i);
    EXPECT_EQ(r.status, CompletionStatus::kSuccess);
    EXPECT_EQ(r.opcode, send ? CompletionOpcode::kRecv : CompletionOpcode::kRecvRdmaWithImm);
    EXPECT_EQ(r.byte_len, size_of(i));
    EXPECT_EQ(r.has_imm, !send);
    EXPECT_EQ(r.imm_data, send ? 0u : 1000 + i);
  }
  EXPECT_EQ(rig.read(1, dst, 0, total), sent);
}

// A list of receives (ibv_post_recv's chain) is posted in its order: the
// sends land in them one by one, and an empty list posts nothing.
TYPED_TEST_P(NicConformance, AReceiveListIsPostedInItsOrder) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  constexpr uint32_t kReceives = 6;
  MemoryRegion src = rig.region(0, 64 * kReceives, Access::kNone);
  MemoryRegion dst = rig.region(1, 64 * kReceives, Access::kLocalWrite);
  const std::vector<std::byte> sent = rig.fill(0, src, 3);
  NIC_ASSERT_OK(rig.nic(1).post_recv_list(rig.qp(1, 0), {}));
  std::vector<RecvWorkRequest> list;
  for (uint32_t i = 0; i < kReceives; ++i) {
    list.push_back(RecvWorkRequest{200 + i, sge_of(dst, 64 * i, 64)});
  }
  NIC_ASSERT_OK(rig.nic(1).post_recv_list(rig.qp(1, 0), list));
  for (uint32_t i = 0; i < kReceives; ++i) {
    NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 64 * i, 64 - i), i));
  }
  ASSERT_TRUE(rig.progress_until_counts({kReceives, kReceives})) << rig.diagnostics(1);
  for (uint32_t i = 0; i < kReceives; ++i) {
    SCOPED_TRACE("receive " + std::to_string(i));
    const Completion& r = rig.completions(1)[i];
    EXPECT_EQ(r.wr_id, 200 + i);
    EXPECT_EQ(r.status, CompletionStatus::kSuccess);
    EXPECT_EQ(r.byte_len, 64 - i);
    const auto at = static_cast<std::ptrdiff_t>(64 * i);
    EXPECT_EQ(rig.read(1, dst, 64 * i, 64 - i),
              std::vector<std::byte>(sent.begin() + at, sent.begin() + at + 64 - i));
  }
}

TYPED_TEST_P(NicConformance, RdmaWriteMovesBytesAndConsumesNoReceive) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  constexpr uint32_t kBytes = 1 << 20;
  MemoryRegion src = rig.region(0, kBytes, Access::kNone);
  MemoryRegion dst = rig.region(1, kBytes + 4096, Access::kLocalWrite | Access::kRemoteWrite);
  MemoryRegion inbox = rig.region(1, 64, Access::kLocalWrite);
  const std::vector<std::byte> sent = rig.fill(0, src, 3);
  NIC_ASSERT_OK(rig.post_recv(1, 0, sge_of(inbox, 0, 64), 30));
  NIC_ASSERT_OK(rig.post_to(0, 1, WorkOpcode::kRdmaWrite, sge_of(src, 0, kBytes), 9, dst, 4096));
  ASSERT_TRUE(rig.progress_until_count(0, 1));

  const Completion& s = rig.completions(0)[0];
  EXPECT_EQ(s.status, CompletionStatus::kSuccess) << rig.diagnostics(0);
  EXPECT_EQ(s.opcode, CompletionOpcode::kRdmaWrite);
  EXPECT_EQ(s.wr_id, 9u);
  EXPECT_EQ(s.byte_len, kBytes);
  EXPECT_EQ(s.peer, 1u);
  EXPECT_EQ(rig.read(1, dst, 4096, kBytes), sent);
  EXPECT_EQ(rig.read(1, dst, 0, 4096), zeros(4096));  // nothing before the target range
  EXPECT_TRUE(rig.completions(1).empty());

  // The receive is still posted: the next send lands in it.
  NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 8), 10));
  ASSERT_TRUE(rig.progress_until_counts({2, 1}));
  EXPECT_EQ(rig.completions(1)[0].wr_id, 30u);
  EXPECT_EQ(rig.completions(1)[0].opcode, CompletionOpcode::kRecv);
  EXPECT_EQ(rig.completions(1)[0].byte_len, 8u);
}

TYPED_TEST_P(NicConformance, WriteWithImmDeliversTheImmediateAndByteLen) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  MemoryRegion src = rig.region(0, 3000, Access::kNone);
  MemoryRegion dst = rig.region(1, 4096, Access::kLocalWrite | Access::kRemoteWrite);
  const std::vector<std::byte> sent = rig.fill(0, src, 4);
  // A write-with-imm consumes a receive, which needs no buffer: the bytes go
  // where the sender says.
  NIC_ASSERT_OK(rig.post_recv(1, 0, Sge{}, 31));
  NIC_ASSERT_OK(rig.post_to(0, 1, WorkOpcode::kRdmaWriteWithImm, sge_of(src, 0, 3000), 6, dst,
                            100, 0xDEADBEEF));
  ASSERT_TRUE(rig.progress_until_counts({1, 1}));

  const Completion& r = rig.completions(1)[0];
  EXPECT_EQ(r.status, CompletionStatus::kSuccess) << rig.diagnostics(1);
  EXPECT_EQ(r.opcode, CompletionOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(r.wr_id, 31u);
  EXPECT_TRUE(r.has_imm);
  EXPECT_EQ(r.imm_data, 0xDEADBEEFu);
  EXPECT_EQ(r.byte_len, 3000u);
  EXPECT_EQ(r.peer, 0u);
  EXPECT_EQ(rig.read(1, dst, 100, 3000), sent);
  EXPECT_EQ(rig.read(1, dst, 0, 100), zeros(100));
  EXPECT_EQ(rig.read(1, dst, 3100, 996), zeros(996));

  const Completion& s = rig.completions(0)[0];
  EXPECT_EQ(s.status, CompletionStatus::kSuccess) << rig.diagnostics(0);
  EXPECT_EQ(s.opcode, CompletionOpcode::kRdmaWrite);
  EXPECT_EQ(s.wr_id, 6u);
  EXPECT_EQ(s.byte_len, 3000u);
}

// What a protocol sends for a dead or empty tensor: no bytes, and neither a
// local nor a remote key that names anything (verbs do not check the rkey of
// a zero-length access, IBA C9-88).
TYPED_TEST_P(NicConformance, ZeroLengthWriteWithImmNeedsNoValidKey) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  NIC_ASSERT_OK(rig.post_recv(1, 0, Sge{}, 1));
  NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kRdmaWriteWithImm, Sge{}, 2, /*remote_addr=*/0,
                         /*rkey=*/0x0BAD0BADu, /*imm=*/12345));
  ASSERT_TRUE(rig.progress_until_counts({1, 1}));

  const Completion& r = rig.completions(1)[0];
  EXPECT_EQ(r.status, CompletionStatus::kSuccess) << rig.diagnostics(1);
  EXPECT_EQ(r.opcode, CompletionOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(r.wr_id, 1u);
  EXPECT_EQ(r.byte_len, 0u);
  EXPECT_TRUE(r.has_imm);
  EXPECT_EQ(r.imm_data, 12345u);
  const Completion& s = rig.completions(0)[0];
  EXPECT_EQ(s.status, CompletionStatus::kSuccess) << rig.diagnostics(0);
  EXPECT_EQ(s.opcode, CompletionOpcode::kRdmaWrite);
  EXPECT_EQ(s.byte_len, 0u);
  EXPECT_EQ(rig.state(0, 1), QpState::kReadyToSend);
  EXPECT_EQ(rig.state(1, 0), QpState::kReadyToSend);
}

TYPED_TEST_P(NicConformance, RdmaReadFetchesRemoteBytes) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  constexpr uint32_t kBytes = 64 * 1024;
  MemoryRegion remote = rig.region(1, kBytes, Access::kRemoteRead);
  MemoryRegion local = rig.region(0, kBytes + 512, Access::kLocalWrite);
  const std::vector<std::byte> there = rig.fill(1, remote, 5);
  NIC_ASSERT_OK(rig.post_to(0, 1, WorkOpcode::kRdmaRead, sge_of(local, 512, kBytes), 11, remote));
  ASSERT_TRUE(rig.progress_until_count(0, 1));

  const Completion& c = rig.completions(0)[0];
  EXPECT_EQ(c.status, CompletionStatus::kSuccess) << rig.diagnostics(0);
  EXPECT_EQ(c.opcode, CompletionOpcode::kRdmaRead);
  EXPECT_EQ(c.wr_id, 11u);
  EXPECT_EQ(c.byte_len, kBytes);
  EXPECT_EQ(c.peer, 1u);
  EXPECT_EQ(rig.read(0, local, 512, kBytes), there);
  EXPECT_EQ(rig.read(0, local, 0, 512), zeros(512));
  EXPECT_TRUE(rig.completions(1).empty());  // the responder sees no completion
}

// The receiver's receive fails with a length error and its QP breaks (the
// next receive is flushed); the sender learns through a remote error (the
// IBA's NAK is "invalid request", IBV_WC_REM_INV_REQ_ERR; soft-RoCE answers
// IBV_WC_REM_OP_ERR: both read as kRemoteAccessError), and what it queued
// behind is flushed.
TYPED_TEST_P(NicConformance, SendLargerThanTheReceiveIsALocalLengthError) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  MemoryRegion src = rig.region(0, 256, Access::kNone);
  MemoryRegion dst = rig.region(1, 256, Access::kLocalWrite);
  NIC_ASSERT_OK(rig.post_recv(1, 0, sge_of(dst, 0, 64), 40));
  NIC_ASSERT_OK(rig.post_recv(1, 0, sge_of(dst, 64, 64), 41));
  NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 256), 50));
  NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 8), 51));
  ASSERT_TRUE(rig.progress_until_counts({2, 2})) << rig.diagnostics(0) << rig.diagnostics(1);

  ASSERT_EQ(rig.completions(1)[0].wr_id, 40u);
  EXPECT_EQ(rig.completions(1)[0].status, CompletionStatus::kLocalLengthError)
      << rig.diagnostics(1);
  EXPECT_EQ(rig.completions(1)[0].opcode, CompletionOpcode::kRecv);
  EXPECT_EQ(rig.completions(1)[1].wr_id, 41u);
  EXPECT_EQ(rig.completions(1)[1].status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(rig.read(1, dst, 64, 64), zeros(64));  // nothing spilled into the next receive

  ASSERT_EQ(rig.completions(0)[0].wr_id, 50u);
  EXPECT_EQ(rig.completions(0)[0].status, CompletionStatus::kRemoteAccessError)
      << rig.diagnostics(0);
  EXPECT_EQ(rig.completions(0)[0].opcode, CompletionOpcode::kSend);
  EXPECT_EQ(rig.completions(0)[1].wr_id, 51u);
  EXPECT_EQ(rig.completions(0)[1].status, CompletionStatus::kWorkRequestFlushed);

  EXPECT_EQ(rig.state(0, 1), QpState::kError);
  EXPECT_EQ(rig.state(1, 0), QpState::kError);
  EXPECT_EQ(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 8), 52).code(), StatusCode::kQpError);
  EXPECT_EQ(rig.post_recv(1, 0, sge_of(dst, 0, 64), 42).code(), StatusCode::kQpError);
}

// Small enough to go inline, which a NIC must not use to skip the key check.
TYPED_TEST_P(NicConformance, WrongLkeyIsALocalProtectionError) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  MemoryRegion src = rig.region(0, 64, Access::kNone);
  MemoryRegion dst = rig.region(1, 64, Access::kLocalWrite);
  rig.fill(0, src, 6);
  NIC_ASSERT_OK(rig.post_recv(1, 0, sge_of(dst, 0, 64), 1));
  Sge wrong = sge_of(src, 0, 32);
  wrong.lkey ^= 0x00ABCD00u;
  NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kSend, wrong, 70));
  NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 32), 71));
  ASSERT_TRUE(rig.progress_until_count(0, 2));

  const Completion& bad = rig.completions(0)[0];
  EXPECT_EQ(bad.wr_id, 70u);
  EXPECT_EQ(bad.status, CompletionStatus::kLocalProtectionError) << rig.diagnostics(0);
  EXPECT_EQ(bad.opcode, CompletionOpcode::kSend);
  EXPECT_EQ(bad.peer, 1u);
  const Completion& next = rig.completions(0)[1];
  EXPECT_EQ(next.wr_id, 71u);
  EXPECT_EQ(next.status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(rig.state(0, 1), QpState::kError);
  EXPECT_EQ(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 8), 72).code(), StatusCode::kQpError);
  // Nothing reached the receiver: its receive is untouched and its end still ready.
  EXPECT_TRUE(rig.completions(1).empty());
  EXPECT_EQ(rig.read(1, dst, 0, 64), zeros(64));
  EXPECT_EQ(rig.state(1, 0), QpState::kReadyToSend);
}

TYPED_TEST_P(NicConformance, LocalRangeOutsideItsRegionIsALocalProtectionError) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  MemoryRegion src = rig.region(0, 64, Access::kNone);
  MemoryRegion dst = rig.region(1, 4096, Access::kLocalWrite | Access::kRemoteWrite);
  // Bytes 48..80 of a 64-byte region.
  NIC_ASSERT_OK(rig.post_to(0, 1, WorkOpcode::kRdmaWrite, sge_of(src, 48, 32), 71, dst));
  ASSERT_TRUE(rig.progress_until_count(0, 1));
  EXPECT_EQ(rig.completions(0)[0].status, CompletionStatus::kLocalProtectionError)
      << rig.diagnostics(0);
  EXPECT_EQ(rig.completions(0)[0].opcode, CompletionOpcode::kRdmaWrite);
  EXPECT_EQ(rig.read(1, dst, 0, 4096), zeros(4096));
  EXPECT_EQ(rig.state(0, 1), QpState::kError);
  EXPECT_EQ(rig.state(1, 0), QpState::kReadyToSend);  // nothing reached the peer
}

// A read writes into local memory: without local write, the NIC may not.
TYPED_TEST_P(NicConformance, ReadIntoARegionWithoutLocalWriteIsALocalProtectionError) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  MemoryRegion local = rig.region(0, 64, Access::kNone);
  MemoryRegion remote = rig.region(1, 64, Access::kRemoteRead);
  rig.fill(1, remote, 7);
  NIC_ASSERT_OK(rig.post_to(0, 1, WorkOpcode::kRdmaRead, sge_of(local, 0, 64), 12, remote));
  ASSERT_TRUE(rig.progress_until_count(0, 1));
  EXPECT_EQ(rig.completions(0)[0].status, CompletionStatus::kLocalProtectionError)
      << rig.diagnostics(0);
  EXPECT_EQ(rig.completions(0)[0].opcode, CompletionOpcode::kRdmaRead);
  EXPECT_EQ(rig.read(0, local, 0, 64), zeros(64));
  EXPECT_EQ(rig.state(0, 1), QpState::kError);
  EXPECT_EQ(rig.state(1, 0), QpState::kReadyToSend);  // the responder did nothing wrong
}

// The receive's own key is wrong: a protection error, not a length error,
// at the receiver; the sender learns through a remote error (verbs:
// IBV_WC_REM_OP_ERR).
TYPED_TEST_P(NicConformance, ReceiveWithAWrongLkeyIsALocalProtectionError) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  MemoryRegion src = rig.region(0, 64, Access::kNone);
  MemoryRegion dst = rig.region(1, 64, Access::kLocalWrite);
  Sge wrong = sge_of(dst, 0, 64);
  wrong.lkey ^= 0x00ABCD00u;
  NIC_ASSERT_OK(rig.post_recv(1, 0, wrong, 72));
  NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 32), 73));
  ASSERT_TRUE(rig.progress_until_counts({1, 1})) << rig.diagnostics(0) << rig.diagnostics(1);
  EXPECT_EQ(rig.completions(1)[0].wr_id, 72u);
  EXPECT_EQ(rig.completions(1)[0].status, CompletionStatus::kLocalProtectionError)
      << rig.diagnostics(1);
  EXPECT_EQ(rig.completions(1)[0].opcode, CompletionOpcode::kRecv);
  EXPECT_EQ(rig.completions(0)[0].wr_id, 73u);
  EXPECT_EQ(rig.completions(0)[0].status, CompletionStatus::kRemoteAccessError)
      << rig.diagnostics(0);
  EXPECT_EQ(rig.state(1, 0), QpState::kError);
  EXPECT_EQ(rig.state(0, 1), QpState::kError);
}

// One way each to name remote memory wrongly (deregistration has its own case).
struct RemoteAccessCase {
  const char* name;
  WorkOpcode opcode;     // kRdmaWrite or kRdmaRead
  Access target_access;  // the target region's registration (1024 bytes)
  uint32_t rkey_xor;     // 0: the target's rkey
  uint64_t offset;       // into the target
  uint32_t bytes;
};

inline const std::vector<RemoteAccessCase>& remote_access_cases() {
  const Access rw = Access::kLocalWrite | Access::kRemoteWrite;
  static const std::vector<RemoteAccessCase> cases = {
      {"bad rkey", WorkOpcode::kRdmaWrite, rw, 0x00ABCD00u, 0, 512},
      {"beyond the region", WorkOpcode::kRdmaWrite, rw, 0, 0, 2048},
      {"straddles the end", WorkOpcode::kRdmaWrite, rw, 0, 1000, 512},
      {"write without remote write", WorkOpcode::kRdmaWrite, Access::kRemoteRead, 0, 0, 512},
      {"read without remote read", WorkOpcode::kRdmaRead, rw, 0, 0, 512},
  };
  return cases;
}

TYPED_TEST_P(NicConformance, BadRkeyRangeOrRightIsARemoteAccessError) {
  for (const RemoteAccessCase& c : remote_access_cases()) {
    SCOPED_TRACE(c.name);
    NicRig<TypeParam> rig;
    ASSERT_TRUE(rig.start());
    MemoryRegion local = rig.region(0, 4096, Access::kLocalWrite);
    MemoryRegion target = rig.region(1, 1024, c.target_access);
    MemoryRegion behind = rig.region(1, 64, Access::kLocalWrite | Access::kRemoteWrite);
    NIC_ASSERT_OK(rig.post_recv(1, 0, Sge{}, 33));
    NIC_ASSERT_OK(rig.post(0, 1, c.opcode, sge_of(local, 0, c.bytes), 1, target.addr + c.offset,
                           target.rkey ^ c.rkey_xor));
    NIC_ASSERT_OK(rig.post_to(0, 1, WorkOpcode::kRdmaWrite, sge_of(local, 0, 16), 2, behind));
    expect_remote_access_error(rig,
                               c.opcode == WorkOpcode::kRdmaRead ? CompletionOpcode::kRdmaRead
                                                                 : CompletionOpcode::kRdmaWrite,
                               target, behind);
    EXPECT_EQ(rig.read(0, local, 0, 4096), zeros(4096));  // a failed read brought nothing
  }
}

TYPED_TEST_P(NicConformance, WriteToADeregisteredRkeyIsARemoteAccessError) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  MemoryRegion src = rig.region(0, 4096, Access::kNone);
  MemoryRegion stale = rig.region(1, 4096, Access::kLocalWrite | Access::kRemoteWrite);
  MemoryRegion behind = rig.region(1, 64, Access::kLocalWrite | Access::kRemoteWrite);
  rig.fill(0, src, 8);
  NIC_ASSERT_OK(rig.nic(1).deregister_memory(stale));
  EXPECT_EQ(rig.nic(1).deregister_memory(stale).code(), StatusCode::kNotFound);
  NIC_ASSERT_OK(rig.post_recv(1, 0, Sge{}, 33));
  NIC_ASSERT_OK(rig.post_to(0, 1, WorkOpcode::kRdmaWrite, sge_of(src, 0, 4096), 1, stale));
  NIC_ASSERT_OK(rig.post_to(0, 1, WorkOpcode::kRdmaWrite, sge_of(src, 0, 16), 2, behind));
  // The memory is still allocated (only its registration is gone): it must stay zero.
  expect_remote_access_error(rig, CompletionOpcode::kRdmaWrite, stale, behind);
}

TYPED_TEST_P(NicConformance, PostingBeyondTheSendQueueDepthIsNoResourceUntilACompletion) {
  NicRig<TypeParam> rig;
  NicClusterOptions options;
  options.send_queue_depth = 8;
  ASSERT_TRUE(rig.start(options));
  const uint32_t depth = rig.nic(0).send_queue_depth();
  ASSERT_EQ(depth, options.send_queue_depth);
  MemoryRegion src = rig.region(0, 64, Access::kNone);
  MemoryRegion dst = rig.region(1, 64, Access::kLocalWrite | Access::kRemoteWrite);
  for (uint32_t i = 0; i < depth; ++i) {
    NIC_ASSERT_OK(rig.post_to(0, 1, WorkOpcode::kRdmaWrite, sge_of(src, 0, 64), i, dst));
  }
  const Status full = rig.post_to(0, 1, WorkOpcode::kRdmaWrite, sge_of(src, 0, 64), 999, dst);
  EXPECT_EQ(full.code(), StatusCode::kNoResource) << full.to_string();
  // A full queue is no error: the QP still works, and one completion frees a slot.
  EXPECT_EQ(rig.state(0, 1), QpState::kReadyToSend);
  ASSERT_TRUE(rig.progress_until_count(0, 1));
  NIC_ASSERT_OK(rig.post_to(0, 1, WorkOpcode::kRdmaWrite, sge_of(src, 0, 64), 1000, dst));
  ASSERT_TRUE(rig.progress_until_count(0, depth + 1));
  EXPECT_EQ(rig.completion(0, 999), nullptr);  // never posted: no completion
  for (uint32_t i = 0; i < depth; ++i) EXPECT_EQ(rig.completions(0)[i].wr_id, i);
  EXPECT_EQ(rig.completions(0)[depth].wr_id, 1000u);
  for (const Completion& c : rig.completions(0)) {
    EXPECT_EQ(c.status, CompletionStatus::kSuccess) << "wr_id " << c.wr_id;
  }
}

// No receive posted and no retries allowed: the sender fails at once; the
// receiver's end is not broken by it.
TYPED_TEST_P(NicConformance, ReceiverNotReadyWithoutRetriesIsRnrRetryExceeded) {
  NicRig<TypeParam> rig;
  NicClusterOptions options;
  options.rnr_retry_count = 0;
  ASSERT_TRUE(rig.start(options));
  MemoryRegion src = rig.region(0, 64, Access::kNone);
  MemoryRegion dst = rig.region(1, 64, Access::kLocalWrite);
  NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 64), 1));
  NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 64), 2));
  ASSERT_TRUE(rig.progress_until_count(0, 2)) << rig.diagnostics(0);

  EXPECT_EQ(rig.completions(0)[0].wr_id, 1u);
  EXPECT_EQ(rig.completions(0)[0].status, CompletionStatus::kRnrRetryExceeded)
      << rig.diagnostics(0);
  EXPECT_EQ(rig.completions(0)[0].opcode, CompletionOpcode::kSend);
  EXPECT_EQ(rig.completions(0)[1].wr_id, 2u);
  EXPECT_EQ(rig.completions(0)[1].status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(rig.state(0, 1), QpState::kError);
  EXPECT_EQ(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 8), 3).code(), StatusCode::kQpError);
  EXPECT_TRUE(rig.completions(1).empty());
  EXPECT_EQ(rig.state(1, 0), QpState::kReadyToSend);
  NIC_ASSERT_OK(rig.post_recv(1, 0, sge_of(dst, 0, 64), 4));
}

// A local error breaks the QP: the receives posted on it are flushed, in
// posting order, and the QP takes no new work of either kind.
TYPED_TEST_P(NicConformance, BrokenQueuePairFlushesPostedReceivesAndRefusesWork) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  MemoryRegion inbox = rig.region(0, 128, Access::kLocalWrite);
  MemoryRegion src = rig.region(0, 64, Access::kNone);
  NIC_ASSERT_OK(rig.post_recv(0, 1, sge_of(inbox, 0, 64), 1));
  NIC_ASSERT_OK(rig.post_recv(0, 1, sge_of(inbox, 64, 64), 2));
  Sge wrong = sge_of(src, 0, 64);
  wrong.lkey ^= 0x00ABCD00u;
  NIC_ASSERT_OK(rig.post(0, 1, WorkOpcode::kSend, wrong, 3));
  ASSERT_TRUE(rig.progress_until_count(0, 3)) << rig.diagnostics(0);

  ASSERT_NE(rig.completion(0, 3), nullptr);
  EXPECT_EQ(rig.completion(0, 3)->status, CompletionStatus::kLocalProtectionError);
  std::vector<uint64_t> flushed_receives;
  for (const Completion& c : rig.completions(0)) {
    if (c.wr_id == 3) continue;
    EXPECT_EQ(c.status, CompletionStatus::kWorkRequestFlushed) << "wr_id " << c.wr_id;
    EXPECT_EQ(c.opcode, CompletionOpcode::kRecv) << "wr_id " << c.wr_id;
    EXPECT_EQ(c.peer, 1u);
    flushed_receives.push_back(c.wr_id);
  }
  EXPECT_EQ(flushed_receives, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(rig.state(0, 1), QpState::kError);
  EXPECT_EQ(rig.post(0, 1, WorkOpcode::kSend, sge_of(src, 0, 8), 4).code(), StatusCode::kQpError);
  EXPECT_EQ(rig.post_recv(0, 1, sge_of(inbox, 0, 64), 5).code(), StatusCode::kQpError);
  const RecvWorkRequest refused[] = {{6, sge_of(inbox, 0, 64)}, {7, sge_of(inbox, 64, 64)}};
  EXPECT_EQ(rig.nic(0).post_recv_list(rig.qp(0, 1), refused).code(), StatusCode::kQpError);
}

TYPED_TEST_P(NicConformance, InvalidQueuePairHandlesAreRefused) {
  NicRig<TypeParam> rig;
  ASSERT_TRUE(rig.start());
  Nic& nic = rig.nic(0);
  const QpHandle bad_handles[] = {QpHandle{0}, nic.queue_pair_to(0) /* itself */, QpHandle{9}};
  for (QpHandle bad : bad_handles) {
    SCOPED_TRACE("handle " + std::to_string(bad.id));
    EXPECT_EQ(nic.post_send(bad, SendWorkRequest{}).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(nic.post_recv(bad, RecvWorkRequest{}).code(), StatusCode::kInvalidArgument);
    const RecvWorkRequest one[] = {RecvWorkRequest{}};
    EXPECT_EQ(nic.post_recv_list(bad, one).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(nic.queue_pair_state(bad), QpState::kError);
  }
  SendWorkRequest unknown;
  unknown.opcode = static_cast<WorkOpcode>(200);
  EXPECT_EQ(nic.post_send(rig.qp(0, 1), unknown).code(), StatusCode::kInvalidArgument);
  // Refused, not failed: the real queue pair is untouched.
  EXPECT_EQ(rig.state(0, 1), QpState::kReadyToSend);
  EXPECT_TRUE(rig.completions(0).empty());
}

REGISTER_TYPED_TEST_SUITE_P(NicConformance, SendLandsInAPostedReceiveByteForByte,
                            OneQueuePairCompletesInPostingOrder, AReceiveListIsPostedInItsOrder,
                            RdmaWriteMovesBytesAndConsumesNoReceive,
                            WriteWithImmDeliversTheImmediateAndByteLen,
                            ZeroLengthWriteWithImmNeedsNoValidKey, RdmaReadFetchesRemoteBytes,
                            SendLargerThanTheReceiveIsALocalLengthError,
                            WrongLkeyIsALocalProtectionError,
                            LocalRangeOutsideItsRegionIsALocalProtectionError,
                            ReadIntoARegionWithoutLocalWriteIsALocalProtectionError,
                            ReceiveWithAWrongLkeyIsALocalProtectionError,
                            BadRkeyRangeOrRightIsARemoteAccessError,
                            WriteToADeregisteredRkeyIsARemoteAccessError,
                            PostingBeyondTheSendQueueDepthIsNoResourceUntilACompletion,
                            ReceiverNotReadyWithoutRetriesIsRnrRetryExceeded,
                            BrokenQueuePairFlushesPostedReceivesAndRefusesWork,
                            InvalidQueuePairHandlesAreRefused);

}  // namespace nic_conformance
}  // namespace tensorwire
