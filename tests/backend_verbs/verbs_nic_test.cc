// VerbsNic against a real RDMA device (soft-RoCE under scripts/with_rdma.sh):
// what only the verbs NIC has (inline sends, zero-length regions, least
// rights at registration, diagnostics, the completion channel, rdma_cm, a
// peer that leaves, a four-rank mesh). The NIC contract's semantics both
// backends share run in verbs_nic_conformance_test.cc (the conformance
// suite). Skipped when no device is configured.
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
#include "tests/backend_verbs/verbs_cluster.h"

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

// Verbs cannot register zero bytes: a zero-length region (a dead or empty
// tensor's) gets keys 0 and no ibv_mr, and is deregistered once. (That no key
// is needed to write zero bytes with an immediate is the conformance suite's.)
TEST(VerbsNic, ZeroLengthRegionHasNoKeysAndDeregistersOnce) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(1);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion empty = cluster->region(0, 0, Access::kRemoteWrite);
  EXPECT_EQ(empty.lkey, 0u);
  EXPECT_EQ(empty.rkey, 0u);
  EXPECT_EQ(empty.length, 0u);
  EXPECT_TRUE(cluster->nic(0).deregister_memory(empty).is_ok());
  EXPECT_EQ(cluster->nic(0).deregister_memory(empty).code(), StatusCode::kNotFound);
}

// The conformance suite checks what a failed request does; here, that the
// NIC says why in verbs' own words (status name and vendor_err), once.
TEST(VerbsNic, ErrorCompletionIsDescribedInVerbsOwnWords) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  auto cluster = start_cluster(2);
  ASSERT_NE(cluster, nullptr);
  MemoryRegion src = cluster->region(0, 4096, Access::kNone);
  MemoryRegion stale = cluster->region(1, 4096, Access::kRemoteWrite);
  ASSERT_TRUE(cluster->nic(1).deregister_memory(stale).is_ok());
  ASSERT_TRUE(
      cluster->post(0, 1, WorkOpcode::kRdmaWrite, src, 4096, 61, stale.addr, stale.rkey).is_ok());
  ASSERT_TRUE(
      cluster->post(0, 1, WorkOpcode::kRdmaWrite, src, 16, 62, stale.addr, stale.rkey).is_ok());
  ASSERT_TRUE(cluster->progress_until_count(0, 2)) << diagnostics_of(cluster->nic(0));
  const auto& lines = cluster->nic(0).diagnostics();
  auto count = [&lines](const std::string& text) {
    return std::count_if(lines.begin(), lines.end(), [&text](const std::string& l) {
      return l.find(text) != std::string::npos;
    });
  };
  EXPECT_EQ(count("rdma write to rank 1 (wr_id 61, 4096 bytes) failed: remote access error "
                  "(IBV_WC_REM_ACCESS_ERR, vendor_err "),
            1)
      << diagnostics_of(cluster->nic(0));
  // The flush that followed adds nothing: the first error says it all.
  EXPECT_EQ(count("wr_id 62"), 0) << diagnostics_of(cluster->nic(0));
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

}  // namespace
}  // namespace tensorwire::verbs::testing
