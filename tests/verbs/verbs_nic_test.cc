// VerbsNic against a real RDMA device (soft-RoCE under scripts/with_rdma.sh):
// the NIC contract's semantics, byte for byte, as tests/backend_sim checks
// them on the simulator. Skipped when no device is configured.
#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend_verbs/cuda_memory.h"
#include "tests/verbs/verbs_cluster.h"

namespace tensorwire::verbs::testing {
namespace {

using std::chrono::milliseconds;

std::unique_ptr<VerbsCluster> start_cluster(
    uint32_t world, VerbsNicOptions options = VerbsCluster::default_options()) {
  Result<std::unique_ptr<VerbsCluster>> cluster = VerbsCluster::start(world, options);
  EXPECT_TRUE(cluster.is_ok()) << cluster.status().to_string();
  return cluster.is_ok() ? std::move(*cluster) : nullptr;
}

bool equal_bytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string diagnostics_of(VerbsNic& nic) {
  std::string out;
  for (const std::string& line : nic.diagnostics()) out += "\n  " + line;
  return out;
}

TEST(VerbsNic, SendLandsInAPrePostedReceiveByteForByte) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  // Least privilege: the NIC only reads a send's source.
  MemoryRegion src = cluster->region(0, 4096, Access::kNone);
  MemoryRegion dst = cluster->region(1, 8192, Access::kLocalWrite);
  fill_pattern(cluster->bytes_of(src), 1);
  ASSERT_TRUE(cluster->post_recv(1, 0, dst, 8192, 77).is_ok());
  ASSERT_TRUE(cluster->post(0, 1, WorkOpcode::kSend, src, 4096, 5).is_ok());
  ASSERT_TRUE(cluster->progress_until(
      [&] { return cluster->completions(0).size() == 1 && cluster->completions(1).size() == 1; }));

  const Completion& r = cluster->completions(1)[0];
  EXPECT_EQ(r.status, CompletionStatus::kSuccess) << completion_status_name(r.status);
  EXPECT_EQ(r.opcode, CompletionOpcode::kRecv);
  EXPECT_EQ(r.wr_id, 77u);
  EXPECT_EQ(r.byte_len, 4096u);
  EXPECT_EQ(r.peer, 0u);
  EXPECT_EQ(r.qp, cluster->nic(1).queue_pair_to(0));
  EXPECT_FALSE(r.has_imm);
  EXPECT_TRUE(equal_bytes(cluster->bytes_of(dst).first(4096), cluster->bytes_of(src)));

  const Completion& s = cluster->completions(0)[0];
  EXPECT_EQ(s.status, CompletionStatus::kSuccess);
  EXPECT_EQ(s.opcode, CompletionOpcode::kSend);
  EXPECT_EQ(s.wr_id, 5u);
  EXPECT_EQ(s.peer, 1u);
  EXPECT_EQ(cluster->nic(0).queue_pair_state(cluster->nic(0).queue_pair_to(1)),
            QpState::kReadyToSend);
}

TEST(VerbsNic, SendsOnOneQueuePairLandInPostedOrder) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  constexpr int kMessages = 8;
  MemoryRegion src = cluster->region(0, kMessages * 512, Access::kNone);
  MemoryRegion dst = cluster->region(1, kMessages * 512, Access::kLocalWrite);
  fill_pattern(cluster->bytes_of(src), 2);
  for (int i = 0; i < kMessages; ++i) {
    MemoryRegion slot = dst;
    slot.addr += static_cast<uint64_t>(i) * 512;
    ASSERT_TRUE(cluster->post_recv(1, 0, slot, 512, 100 + i).is_ok());
  }
  for (int i = 0; i < kMessages; ++i) {
    MemoryRegion piece = src;
    piece.addr += static_cast<uint64_t>(i) * 512;
    ASSERT_TRUE(cluster->post(0, 1, WorkOpcode::kSend, piece, 512, i).is_ok());
  }
  ASSERT_TRUE(cluster->progress_until_count(1, kMessages));
  for (int i = 0; i < kMessages; ++i) {
    EXPECT_EQ(cluster->completions(1)[i].wr_id, static_cast<uint64_t>(100 + i));
    EXPECT_EQ(cluster->completions(1)[i].status, CompletionStatus::kSuccess);
  }
  EXPECT_TRUE(equal_bytes(cluster->bytes_of(dst), cluster->bytes_of(src)));
}

TEST(VerbsNic, SmallInlineSendIsByteExact) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  const uint32_t inline_bytes = cluster->nic(0).max_inline_data_to(1);
  // rxe grants inline data; a device that grants none makes this an ordinary send.
  const uint32_t length = std::max<uint32_t>(1, std::min<uint32_t>(inline_bytes, 60));
  MemoryRegion src = cluster->region(0, length, Access::kNone);
  MemoryRegion dst = cluster->region(1, 64, Access::kLocalWrite);
  fill_pattern(cluster->bytes_of(src), 3);
  ASSERT_TRUE(cluster->post_recv(1, 0, dst, 64, 1).is_ok());
  ASSERT_TRUE(cluster->post(0, 1, WorkOpcode::kSend, src, length, 2).is_ok());
  ASSERT_TRUE(cluster->progress_until_count(1, 1));
  EXPECT_EQ(cluster->completions(1)[0].status, CompletionStatus::kSuccess);
  EXPECT_EQ(cluster->completions(1)[0].byte_len, length);
  EXPECT_TRUE(equal_bytes(cluster->bytes_of(dst).first(length), cluster->bytes_of(src)));
  RecordProperty("max_inline_data", static_cast<int>(inline_bytes));
}

TEST(VerbsNic, RdmaWriteMovesBytesExactlyAndConsumesNoReceive) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  constexpr uint32_t kBytes = 1 << 20;
  MemoryRegion src = cluster->region(0, kBytes, Access::kNone);
  MemoryRegion dst = cluster->region(1, kBytes + 4096, Access::kRemoteWrite);
  fill_pattern(cluster->bytes_of(src), 4);
  ASSERT_TRUE(cluster->post(0, 1, WorkOpcode::kRdmaWrite, src, kBytes, 9, dst.addr + 4096, dst.rkey)
                  .is_ok());
  ASSERT_TRUE(cluster->progress_until_count(0, 1));
  const Completion& s = cluster->completions(0)[0];
  EXPECT_EQ(s.status, CompletionStatus::kSuccess) << diagnostics_of(cluster->nic(0));
  EXPECT_EQ(s.opcode, CompletionOpcode::kRdmaWrite);
  EXPECT_EQ(s.byte_len, kBytes);
  EXPECT_TRUE(equal_bytes(cluster->bytes_of(dst).subspan(4096), cluster->bytes_of(src)));
  // Nothing before the target range was touched.
  const auto head = cluster->bytes_of(dst).first(4096);
  EXPECT_TRUE(std::all_of(head.begin(), head.end(), [](std::byte b) { return b == std::byte{0}; }));
  EXPECT_TRUE(cluster->completions(1).empty());
}

TEST(VerbsNic, WriteWithImmDeliversTheImmediateAndByteLen) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion src = cluster->region(0, 3000, Access::kNone);
  MemoryRegion dst = cluster->region(1, 4096, Access::kRemoteWrite);
  MemoryRegion none = cluster->region(1, 0, Access::kLocalWrite);
  fill_pattern(cluster->bytes_of(src), 5);
  // A write-with-imm consumes a receive but writes where the sender says.
  ASSERT_TRUE(cluster->post_recv(1, 0, none, 0, 31).is_ok());
  ASSERT_TRUE(cluster
                  ->post(0, 1, WorkOpcode::kRdmaWriteWithImm, src, 3000, 6, dst.addr + 100,
                         dst.rkey, 0xDEADBEEF)
                  .is_ok());
  ASSERT_TRUE(cluster->progress_until(
      [&] { return cluster->completions(0).size() == 1 && cluster->completions(1).size() == 1; }));
  const Completion& r = cluster->completions(1)[0];
  EXPECT_EQ(r.status, CompletionStatus::kSuccess) << diagnostics_of(cluster->nic(1));
  EXPECT_EQ(r.opcode, CompletionOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(r.wr_id, 31u);
  EXPECT_TRUE(r.has_imm);
  EXPECT_EQ(r.imm_data, 0xDEADBEEFu);
  EXPECT_EQ(r.byte_len, 3000u);
  EXPECT_EQ(r.peer, 0u);
  EXPECT_TRUE(equal_bytes(cluster->bytes_of(dst).subspan(100, 3000), cluster->bytes_of(src)));
  EXPECT_EQ(cluster->completions(0)[0].opcode, CompletionOpcode::kRdmaWrite);
  EXPECT_EQ(cluster->completions(0)[0].status, CompletionStatus::kSuccess);
}

TEST(VerbsNic, ZeroLengthWriteWithImmCarriesOnlyTheImmediate) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  // What the protocol sends for a dead or empty tensor: no bytes, no key.
  MemoryRegion empty_src = cluster->region(0, 0, Access::kNone);
  MemoryRegion empty_dst = cluster->region(1, 0, Access::kRemoteWrite);
  EXPECT_EQ(empty_src.lkey, 0u);
  ASSERT_TRUE(cluster->post_recv(1, 0, empty_dst, 0, 1).is_ok());
  ASSERT_TRUE(cluster
                  ->post(0, 1, WorkOpcode::kRdmaWriteWithImm, empty_src, 0, 2, empty_dst.addr,
                         empty_dst.rkey, 12345)
                  .is_ok());
  ASSERT_TRUE(cluster->progress_until_count(1, 1));
  const Completion& r = cluster->completions(1)[0];
  EXPECT_EQ(r.status, CompletionStatus::kSuccess) << diagnostics_of(cluster->nic(1));
  EXPECT_EQ(r.opcode, CompletionOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(r.byte_len, 0u);
  EXPECT_EQ(r.imm_data, 12345u);
  EXPECT_TRUE(cluster->nic(0).deregister_memory(empty_src).is_ok());
  EXPECT_EQ(cluster->nic(0).deregister_memory(empty_src).code(), StatusCode::kNotFound);
}

TEST(VerbsNic, RdmaReadFetchesRemoteBytesExactly) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  constexpr uint32_t kBytes = 64 * 1024;
  MemoryRegion remote = cluster->region(1, kBytes, Access::kRemoteRead);
  MemoryRegion local = cluster->region(0, kBytes, Access::kLocalWrite);
  fill_pattern(cluster->bytes_of(remote), 6);
  ASSERT_TRUE(
      cluster->post(0, 1, WorkOpcode::kRdmaRead, local, kBytes, 11, remote.addr, remote.rkey)
          .is_ok());
  ASSERT_TRUE(cluster->progress_until_count(0, 1));
  const Completion& c = cluster->completions(0)[0];
  EXPECT_EQ(c.status, CompletionStatus::kSuccess) << diagnostics_of(cluster->nic(0));
  EXPECT_EQ(c.opcode, CompletionOpcode::kRdmaRead);
  EXPECT_EQ(c.wr_id, 11u);
  EXPECT_EQ(c.byte_len, kBytes);
  EXPECT_TRUE(equal_bytes(cluster->bytes_of(local), cluster->bytes_of(remote)));
  EXPECT_TRUE(cluster->completions(1).empty());
}

TEST(VerbsNic, SendLargerThanTheReceiveIsALocalLengthErrorAtTheReceiver) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion src = cluster->region(0, 256, Access::kNone);
  MemoryRegion dst = cluster->region(1, 256, Access::kLocalWrite);
  ASSERT_TRUE(cluster->post_recv(1, 0, dst, 64, 40).is_ok());
  ASSERT_TRUE(cluster->post_recv(1, 0, dst, 64, 41).is_ok());
  ASSERT_TRUE(cluster->post(0, 1, WorkOpcode::kSend, src, 256, 50).is_ok());
  ASSERT_TRUE(cluster->progress_until([&] {
    return cluster->completions(0).size() >= 1 && cluster->completions(1).size() >= 2;
  })) << diagnostics_of(cluster->nic(0))
      << diagnostics_of(cluster->nic(1));
  const Completion* r = cluster->completion(1, 40);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status, CompletionStatus::kLocalLengthError)
      << completion_status_name(r->status) << diagnostics_of(cluster->nic(1));
  EXPECT_EQ(r->opcode, CompletionOpcode::kRecv);
  // The receiver's queue pair broke: the next receive is flushed.
  const Completion* flushed = cluster->completion(1, 41);
  ASSERT_NE(flushed, nullptr);
  EXPECT_EQ(flushed->status, CompletionStatus::kWorkRequestFlushed);
  const Completion* s = cluster->completion(0, 50);
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->status, CompletionStatus::kSuccess);
  EXPECT_EQ(s->opcode, CompletionOpcode::kSend);
  RecordProperty("sender_status", completion_status_name(s->status));
  EXPECT_EQ(cluster->nic(1).queue_pair_state(cluster->nic(1).queue_pair_to(0)), QpState::kError);
  EXPECT_EQ(cluster->nic(0).queue_pair_state(cluster->nic(0).queue_pair_to(1)), QpState::kError);
  EXPECT_EQ(cluster->post(0, 1, WorkOpcode::kSend, src, 8, 51).code(), StatusCode::kQpError);
}

TEST(VerbsNic, WriteToADeregisteredRkeyIsARemoteAccessError) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion src = cluster->region(0, 4096, Access::kNone);
  MemoryRegion stale = cluster->region(1, 4096, Access::kRemoteWrite);
  MemoryRegion ring = cluster->region(1, 64, Access::kLocalWrite);
  ASSERT_TRUE(cluster->nic(1).deregister_memory(stale).is_ok());
  EXPECT_EQ(cluster->nic(1).deregister_memory(stale).code(), StatusCode::kNotFound);
  ASSERT_TRUE(cluster->post_recv(1, 0, ring, 64, 60).is_ok());
  ASSERT_TRUE(
      cluster->post(0, 1, WorkOpcode::kRdmaWrite, src, 4096, 61, stale.addr, stale.rkey).is_ok());
  ASSERT_TRUE(
      cluster->post(0, 1, WorkOpcode::kRdmaWrite, src, 16, 62, stale.addr, stale.rkey).is_ok());
  ASSERT_TRUE(cluster->progress_until_count(0, 2)) << diagnostics_of(cluster->nic(0));
  const Completion* bad = cluster->completion(0, 61);
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->status, CompletionStatus::kRemoteAccessError) << diagnostics_of(cluster->nic(0));
  EXPECT_EQ(bad->opcode, CompletionOpcode::kRdmaWrite);
  EXPECT_EQ(bad->peer, 1u);
  // What followed it on the broken queue pair is flushed, with its own opcode.
  const Completion* next = cluster->completion(0, 62);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(next->opcode, CompletionOpcode::kRdmaWrite);
  EXPECT_EQ(cluster->nic(0).queue_pair_state(cluster->nic(0).queue_pair_to(1)), QpState::kError);
  EXPECT_EQ(cluster->post(0, 1, WorkOpcode::kSend, src, 8, 63).code(), StatusCode::kQpError);
  // The responder's end breaks too; its posted receive is flushed.
  ASSERT_TRUE(cluster->progress_until_count(1, 1)) << diagnostics_of(cluster->nic(1));
  EXPECT_EQ(cluster->completions(1)[0].wr_id, 60u);
  EXPECT_EQ(cluster->completions(1)[0].status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(cluster->nic(1).queue_pair_state(cluster->nic(1).queue_pair_to(0)), QpState::kError);
  // The failure is described in verbs' own words.
  const auto& lines = cluster->nic(0).diagnostics();
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("IBV_WC_REM_ACCESS_ERR") != std::string::npos;
  })) << diagnostics_of(cluster->nic(0));
}

TEST(VerbsNic, WrongLkeyIsALocalProtectionError) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion src = cluster->region(0, 64, Access::kNone);
  MemoryRegion dst = cluster->region(1, 64, Access::kLocalWrite);
  ASSERT_TRUE(cluster->post_recv(1, 0, dst, 64, 1).is_ok());
  MemoryRegion wrong = src;
  wrong.lkey = src.lkey ^ 0x00ABCD00u;
  // Small enough to go inline, which would skip the key check: the NIC must not.
  ASSERT_TRUE(cluster->post(0, 1, WorkOpcode::kSend, wrong, 32, 70).is_ok());
  ASSERT_TRUE(cluster->progress_until_count(0, 1));
  const Completion& c = cluster->completions(0)[0];
  EXPECT_EQ(c.wr_id, 70u);
  EXPECT_EQ(c.status, CompletionStatus::kLocalProtectionError) << diagnostics_of(cluster->nic(0));
  EXPECT_EQ(c.opcode, CompletionOpcode::kSend);
  EXPECT_EQ(cluster->nic(0).queue_pair_state(cluster->nic(0).queue_pair_to(1)), QpState::kError);
}

TEST(VerbsNic, ReceiveWithAWrongLkeyIsALocalProtectionErrorNotALengthError) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion src = cluster->region(0, 64, Access::kNone);
  MemoryRegion dst = cluster->region(1, 64, Access::kLocalWrite);
  MemoryRegion wrong = dst;
  wrong.lkey = dst.lkey ^ 0x00ABCD00u;
  ASSERT_TRUE(cluster->post_recv(1, 0, wrong, 64, 72).is_ok());
  ASSERT_TRUE(cluster->post(0, 1, WorkOpcode::kSend, src, 32, 73).is_ok());
  ASSERT_TRUE(cluster->progress_until_count(1, 1));
  EXPECT_EQ(cluster->completions(1)[0].status, CompletionStatus::kLocalProtectionError)
      << diagnostics_of(cluster->nic(1));
}

TEST(VerbsNic, LocalRangeOutsideItsRegionIsALocalProtectionError) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion src = cluster->region(0, 64, Access::kNone);
  MemoryRegion dst = cluster->region(1, 4096, Access::kRemoteWrite);
  MemoryRegion beyond = src;
  beyond.addr += 48;  // 48..80 of a 64-byte region
  ASSERT_TRUE(
      cluster->post(0, 1, WorkOpcode::kRdmaWrite, beyond, 32, 71, dst.addr, dst.rkey).is_ok());
  ASSERT_TRUE(cluster->progress_until_count(0, 1));
  EXPECT_EQ(cluster->completions(0)[0].status, CompletionStatus::kLocalProtectionError)
      << diagnostics_of(cluster->nic(0));
}

TEST(VerbsNic, FullSendQueueAnswersNoResourceUntilACompletionFreesASlot) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  const uint32_t depth = cluster->nic(0).send_queue_depth();
  ASSERT_GT(depth, 0u);
  MemoryRegion src = cluster->region(0, 64, Access::kNone);
  MemoryRegion dst = cluster->region(1, 64, Access::kRemoteWrite);
  for (uint32_t i = 0; i < depth; ++i) {
    ASSERT_TRUE(cluster->post(0, 1, WorkOpcode::kRdmaWrite, src, 64, i, dst.addr, dst.rkey).is_ok())
        << i;
  }
  const Status full = cluster->post(0, 1, WorkOpcode::kRdmaWrite, src, 64, 999, dst.addr, dst.rkey);
  EXPECT_EQ(full.code(), StatusCode::kNoResource) << full.to_string();
  // Not posted: no completion will come for it.
  ASSERT_TRUE(cluster->progress_until_count(0, depth));
  EXPECT_EQ(cluster->completion(0, 999), nullptr);
  for (const Completion& c : cluster->completions(0)) {
    EXPECT_EQ(c.status, CompletionStatus::kSuccess);
  }
  EXPECT_TRUE(
      cluster->post(0, 1, WorkOpcode::kRdmaWrite, src, 64, 1000, dst.addr, dst.rkey).is_ok());
  ASSERT_TRUE(cluster->progress_until_count(0, depth + 1));
}

TEST(VerbsNic, RegionWithoutRemoteWriteRejectsARemoteWrite) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion src = cluster->region(0, 256, Access::kNone);
  // A receive ring: the NIC writes into it locally, a peer may not.
  MemoryRegion ring = cluster->region(1, 256, Access::kLocalWrite);
  ASSERT_TRUE(
      cluster->post(0, 1, WorkOpcode::kRdmaWrite, src, 256, 80, ring.addr, ring.rkey).is_ok());
  ASSERT_TRUE(cluster->progress_until_count(0, 1));
  EXPECT_EQ(cluster->completions(0)[0].status, CompletionStatus::kRemoteAccessError)
      << diagnostics_of(cluster->nic(0));
  const auto ring_bytes = cluster->bytes_of(ring);
  EXPECT_TRUE(std::all_of(ring_bytes.begin(), ring_bytes.end(),
                          [](std::byte b) { return b == std::byte{0}; }));
}

TEST(VerbsNic, RegionWithoutRemoteReadRejectsARemoteRead) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion target = cluster->region(1, 256, Access::kRemoteWrite);
  MemoryRegion local = cluster->region(0, 256, Access::kLocalWrite);
  ASSERT_TRUE(
      cluster->post(0, 1, WorkOpcode::kRdmaRead, local, 256, 81, target.addr, target.rkey).is_ok());
  ASSERT_TRUE(cluster->progress_until_count(0, 1));
  EXPECT_EQ(cluster->completions(0)[0].status, CompletionStatus::kRemoteAccessError)
      << diagnostics_of(cluster->nic(0));
  EXPECT_EQ(cluster->completions(0)[0].opcode, CompletionOpcode::kRdmaRead);
}

TEST(VerbsNic, RegistrationGrantsTheLeastRightsVerbsAllow) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(1);
  ASSERT_NE(cluster, nullptr);
  EXPECT_EQ(cluster->region(0, 4096, Access::kNone).access, Access::kNone);
  EXPECT_EQ(cluster->region(0, 4096, Access::kLocalWrite).access, Access::kLocalWrite);
  EXPECT_EQ(cluster->region(0, 4096, Access::kRemoteRead).access, Access::kRemoteRead);
  // Verbs refuse remote write without local write.
  EXPECT_EQ(cluster->region(0, 4096, Access::kRemoteWrite).access,
            Access::kLocalWrite | Access::kRemoteWrite);
  // An address that is no GPU allocation cannot be registered as GPU memory
  // (without CUDA in the build: said so; with it: both GPUDirect ways named).
  Result<MemoryRegion> gpu = cluster->nic(0).register_memory(
      Buffer{0x1000, 4096, MemoryKind::kDeviceGpuDirect, 0}, Access::kRemoteWrite);
  EXPECT_EQ(gpu.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gpu.status().message().find(cuda::built() ? "GPUDirect registration failed" : "CUDA"), std::string::npos)
      << gpu.status().to_string();
  // GPU memory the HCA cannot reach is refused: the protocol stages it
  // through a registered host proxy instead.
  Result<MemoryRegion> no_direct = cluster->nic(0).register_memory(
      Buffer{0x1000, 4096, MemoryKind::kDeviceNoGpuDirect, 0}, Access::kLocalWrite);
  EXPECT_EQ(no_direct.status().code(), StatusCode::kInvalidArgument);
  // A failed registration names the call and the device.
  Result<MemoryRegion> bad = cluster->nic(0).register_memory(
      Buffer{0x10, 4096, MemoryKind::kHostPinned, 0}, Access::kLocalWrite);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("ibv_reg_mr(" + cluster->nic(0).device_name()),
            std::string::npos)
      << bad.status().to_string();
}

TEST(VerbsNic, FourRanksExchangeMessagesWithEveryPeer) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  constexpr uint32_t kWorld = 4;
  constexpr uint32_t kBytes = 2048;
  auto cluster = start_cluster(kWorld);
  ASSERT_NE(cluster, nullptr);
  std::vector<std::vector<MemoryRegion>> inbox(kWorld, std::vector<MemoryRegion>(kWorld));
  std::vector<std::vector<MemoryRegion>> outbox(kWorld, std::vector<MemoryRegion>(kWorld));
  for (RankId r = 0; r < kWorld; ++r) {
    for (RankId p = 0; p < kWorld; ++p) {
      if (p == r) continue;
      inbox[r][p] = cluster->region(r, kBytes, Access::kLocalWrite);
      outbox[r][p] = cluster->region(r, kBytes, Access::kNone);
      fill_pattern(cluster->bytes_of(outbox[r][p]), r * 16 + p);
      ASSERT_TRUE(cluster->post_recv(r, p, inbox[r][p], kBytes, 1000 + p).is_ok());
    }
  }
  for (RankId r = 0; r < kWorld; ++r) {
    for (RankId p = 0; p < kWorld; ++p) {
      if (p == r) continue;
      ASSERT_TRUE(cluster->post(r, p, WorkOpcode::kSend, outbox[r][p], kBytes, p).is_ok());
    }
  }
  ASSERT_TRUE(cluster->progress_until([&] {
    for (RankId r = 0; r < kWorld; ++r) {
      if (cluster->completions(r).size() < 2 * (kWorld - 1)) return false;
    }
    return true;
  }));
  for (RankId r = 0; r < kWorld; ++r) {
    for (RankId p = 0; p < kWorld; ++p) {
      if (p == r) continue;
      const Completion* in = cluster->completion(r, 1000 + p);
      ASSERT_NE(in, nullptr) << "rank " << r << " from " << p;
      EXPECT_EQ(in->status, CompletionStatus::kSuccess);
      EXPECT_EQ(in->peer, p);
      EXPECT_EQ(in->byte_len, kBytes);
      EXPECT_TRUE(equal_bytes(cluster->bytes_of(inbox[r][p]), cluster->bytes_of(outbox[p][r])))
          << "rank " << r << " from " << p;
      const Completion* out = cluster->completion(r, p);
      ASSERT_NE(out, nullptr);
      EXPECT_EQ(out->status, CompletionStatus::kSuccess);
      EXPECT_EQ(out->peer, p);
    }
  }
}

VerbsNicOptions with_completion_channel() {
  VerbsNicOptions options = VerbsCluster::default_options();
  options.use_completion_channel = true;
  return options;
}

TEST(VerbsNic, CompletionChannelWakesAWaitingRankAndTimesOutWhenIdle) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2, with_completion_channel());
  ASSERT_NE(cluster, nullptr);
  const auto before = std::chrono::steady_clock::now();
  Result<uint32_t> idle = cluster->nic(1).wait_for_completions(milliseconds(100));
  ASSERT_TRUE(idle.is_ok()) << idle.status().to_string();
  EXPECT_EQ(*idle, 0u);
  EXPECT_GE(std::chrono::steady_clock::now() - before, milliseconds(90));

  MemoryRegion src = cluster->region(0, 128, Access::kNone);
  MemoryRegion dst = cluster->region(1, 128, Access::kLocalWrite);
  ASSERT_TRUE(cluster->post_recv(1, 0, dst, 128, 1).is_ok());
  ASSERT_TRUE(cluster->post(0, 1, WorkOpcode::kSend, src, 128, 2).is_ok());
  Result<uint32_t> woke = cluster->nic(1).wait_for_completions(std::chrono::seconds(10));
  ASSERT_TRUE(woke.is_ok()) << woke.status().to_string();
  EXPECT_EQ(*woke, 1u);
  EXPECT_EQ(cluster->completions(1)[0].status, CompletionStatus::kSuccess);
}

TEST(VerbsNic, CompletionChannelWaitAlsoEndsWhenAnotherDescriptorIsReadable) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2, with_completion_channel());
  ASSERT_NE(cluster, nullptr);
  int pipe_fds[2] = {-1, -1};
  ASSERT_EQ(pipe(pipe_fds), 0);
  // Closed however the test ends.
  const std::unique_ptr<int[], void (*)(int*)> closer(pipe_fds, [](int* fds) {
    close(fds[0]);
    close(fds[1]);
  });
  const int readable = pipe_fds[0];
  // Nothing written yet: the wait runs to its timeout.
  const auto before = std::chrono::steady_clock::now();
  Result<uint32_t> idle =
      cluster->nic(1).wait_for_completions(milliseconds(100), std::span<const int>(&readable, 1));
  ASSERT_TRUE(idle.is_ok()) << idle.status().to_string();
  EXPECT_EQ(*idle, 0u);
  EXPECT_GE(std::chrono::steady_clock::now() - before, milliseconds(90));
  // A byte in the pipe (as the coordinator's answer would be in its socket):
  // a 10 s wait ends long before its timeout, with no completion.
  ASSERT_EQ(write(pipe_fds[1], "x", 1), 1);
  const auto woken_at = std::chrono::steady_clock::now();
  Result<uint32_t> woke = cluster->nic(1).wait_for_completions(std::chrono::seconds(10),
                                                               std::span<const int>(&readable, 1));
  ASSERT_TRUE(woke.is_ok()) << woke.status().to_string();
  EXPECT_EQ(*woke, 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - woken_at, std::chrono::seconds(5));
}

TEST(VerbsNic, PeerThatLeavesBreaksTheQueuePairAndFlushesItsReceives) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion ring = cluster->region(0, 64, Access::kLocalWrite);
  ASSERT_TRUE(cluster->post_recv(0, 1, ring, 64, 90).is_ok());
  cluster->close_rank(1);
  ASSERT_TRUE(cluster->progress_until_count(0, 1)) << diagnostics_of(cluster->nic(0));
  EXPECT_EQ(cluster->completions(0)[0].wr_id, 90u);
  EXPECT_EQ(cluster->completions(0)[0].status, CompletionStatus::kWorkRequestFlushed);
  EXPECT_EQ(cluster->nic(0).queue_pair_state(cluster->nic(0).queue_pair_to(1)), QpState::kError);
}

TEST(VerbsNic, ReceiverNotReadyWithoutRetriesIsRnrRetryExceeded) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  VerbsNicOptions options = VerbsCluster::default_options();
  options.rnr_retry_count = 0;
  auto cluster = start_cluster(2, options);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion src = cluster->region(0, 64, Access::kNone);
  ASSERT_TRUE(cluster->post(0, 1, WorkOpcode::kSend, src, 64, 1).is_ok());  // no receive posted
  ASSERT_TRUE(cluster->progress_until_count(0, 1));
  EXPECT_EQ(cluster->completions(0)[0].status, CompletionStatus::kRnrRetryExceeded)
      << diagnostics_of(cluster->nic(0));
  EXPECT_EQ(cluster->nic(0).queue_pair_state(cluster->nic(0).queue_pair_to(1)), QpState::kError);
}

// Waits for the next rdma_cm event on `channel` while the cluster makes
// progress (rank 0 must read its own rdma_cm events to answer).
rdma_cm_event_type next_cm_event(VerbsCluster& cluster, rdma_event_channel* channel) {
  rdma_cm_event_type type = RDMA_CM_EVENT_DEVICE_REMOVAL;
  bool got = false;
  cluster.progress_until([&] {
    pollfd p{channel->fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel, &event) != 0) return false;
    type = event->event;
    got = true;
    EXPECT_EQ(rdma_ack_cm_event(event), 0);
    return true;
  });
  EXPECT_TRUE(got) << "no rdma_cm event came";
  return type;
}

TEST(VerbsNic, StrangerConnectingAfterSetUpIsRejectedAndChangesNothing) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  rdma_event_channel* channel = rdma_create_event_channel();
  ASSERT_NE(channel, nullptr);
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in to = cluster->nic(0).endpoint().to_sockaddr();
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&to), 2000), 0);
  EXPECT_EQ(next_cm_event(*cluster, channel), RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_EQ(rdma_resolve_route(id, 2000), 0);
  EXPECT_EQ(next_cm_event(*cluster, channel), RDMA_CM_EVENT_ROUTE_RESOLVED);
  const char garbage[] = "not a tensorwire hello";
  rdma_conn_param param{};
  param.private_data = garbage;
  param.private_data_len = sizeof garbage;
  param.responder_resources = 1;
  param.initiator_depth = 1;
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  param.qp_num = 0x1234;  // no queue pair behind it: rank 0 must refuse before it matters
  ASSERT_EQ(rdma_connect(id, &param), 0);
  EXPECT_EQ(next_cm_event(*cluster, channel), RDMA_CM_EVENT_REJECTED);
  EXPECT_EQ(rdma_destroy_id(id), 0);
  rdma_destroy_event_channel(channel);

  // The mesh is untouched.
  EXPECT_EQ(cluster->nic(0).queue_pair_state(cluster->nic(0).queue_pair_to(1)),
            QpState::kReadyToSend);
  MemoryRegion src = cluster->region(0, 64, Access::kNone);
  MemoryRegion dst = cluster->region(1, 64, Access::kLocalWrite);
  ASSERT_TRUE(cluster->post_recv(1, 0, dst, 64, 1).is_ok());
  ASSERT_TRUE(cluster->post(0, 1, WorkOpcode::kSend, src, 64, 2).is_ok());
  ASSERT_TRUE(cluster->progress_until_count(1, 1));
  EXPECT_EQ(cluster->completions(1)[0].status, CompletionStatus::kSuccess);
}

TEST(VerbsNic, InvalidQueuePairHandlesAreRefused) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  VerbsNic& nic = cluster->nic(0);
  SendWorkRequest wr;
  EXPECT_EQ(nic.post_send(QpHandle{0}, wr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(nic.post_send(nic.queue_pair_to(0), wr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(nic.post_recv(QpHandle{7}, RecvWorkRequest{}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(nic.queue_pair_state(QpHandle{7}), QpState::kError);
}

}  // namespace
}  // namespace tensorwire::verbs::testing
