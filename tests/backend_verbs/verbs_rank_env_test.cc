// The pieces of a verbs rank's environment that need no RDMA device: host
// memory, the monotonic clock's timers, the host copy engine, the device
// address lookup, the phase gate, and the all-gather
// of large results, each with its errors.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "launch/blob_all_gather.h"
#include "launch/coordinator_phase_gate.h"
#include "backend_verbs/cuda_memory.h"
#include "backend_verbs/device_ipv4_address.h"
#include "backend_verbs/verbs_copy_engine.h"
#include "backend_verbs/verbs_memory_space.h"
#include "backend_verbs/monotonic_clock.h"
#include "launch/tcp_coordinator.h"

namespace tensorwire::verbs {
namespace {

using std::chrono::milliseconds;

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(std::byte(static_cast<unsigned char>(c)));
  return out;
}

TEST(VerbsMemorySpace, AllocationsArePageAlignedZeroedAndDistinctEvenWhenEmpty) {
  VerbsMemorySpace memory;
  Result<Buffer> a = memory.allocate(MemoryKind::kHostPinned, 0, 100);
  Result<Buffer> b = memory.allocate(MemoryKind::kHostPageable, 0, 0);
  Result<Buffer> c = memory.allocate(MemoryKind::kHostPageable, 0, 0);
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  EXPECT_EQ(a->addr % memory.page_bytes(), 0u);
  EXPECT_EQ(a->length, 100u);
  EXPECT_EQ(b->kind, MemoryKind::kHostPageable);
  EXPECT_NE(b->addr, c->addr);
  std::span<std::byte> view = memory.host_view(*a);
  ASSERT_EQ(view.size(), 100u);
  for (std::byte x : view) EXPECT_EQ(x, std::byte{0});
  memory.free(*a);
  memory.free(*b);
  memory.free(*c);
  EXPECT_EQ(memory.live_allocations(), 0u);
}

TEST(VerbsMemorySpace, GpuMemoryThisMachineCannotGiveIsRefusedNamingKindDeviceAndCall) {
  Result<uint32_t> gpus = cuda::device_count();
  if (gpus && *gpus > 1) GTEST_SKIP() << "GPU 1 exists here: see the GPU tests";
  VerbsMemorySpace memory;
  Result<Buffer> gpu = memory.allocate(MemoryKind::kDeviceGpuDirect, 1, 64);
  ASSERT_FALSE(gpu.is_ok());
  EXPECT_NE(gpu.status().message().find("gpu_direct (GPU 1)"), std::string::npos)
      << gpu.status().message();
  EXPECT_NE(gpu.status().message().find("cuda"), std::string::npos) << gpu.status().message();
}

// GPU memory through CUDA: bytes go in and out with cudaMemcpy, the CPU may
// not touch them, and the copy engine moves them both ways on the GPU's
// stream, finishing from the progress loop.
TEST(VerbsMemorySpace, GpuMemoryRoundTripsThroughTheCopyEngine) {
  Result<uint32_t> gpus = cuda::device_count();
  if (!gpus) GTEST_SKIP() << "no CUDA GPU: " << gpus.status().to_string();
  VerbsMemorySpace memory;
  VerbsCopyEngine engine(memory);
  Result<Buffer> gpu = memory.allocate(MemoryKind::kDeviceNoGpuDirect, 0, 4);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  EXPECT_TRUE(memory.host_view(*gpu).empty()) << "the CPU cannot touch GPU memory";
  ASSERT_TRUE(memory.write_bytes(*gpu, 0, bytes_of("gpu!")).is_ok());
  Buffer host = *memory.allocate(MemoryKind::kHostPinned, 0, 8);
  ASSERT_TRUE(memory.write_bytes(host, 4, bytes_of("wxyz")).is_ok());
  int finished = 0;
  ASSERT_TRUE(engine.submit(host, 0, *gpu, 0, 4, [&](const Status& st) { finished += st.is_ok(); }).is_ok());
  ASSERT_TRUE(engine.submit(*gpu, 0, host, 4, 4, [&](const Status& st) { finished += st.is_ok(); }).is_ok());
  while (engine.pending() > 0) engine.progress();
  EXPECT_EQ(finished, 2);
  std::vector<std::byte> out(4);
  ASSERT_TRUE(memory.read_bytes(host, 0, out).is_ok());
  EXPECT_EQ(out, bytes_of("gpu!"));
  ASSERT_TRUE(memory.read_bytes(*gpu, 0, out).is_ok());
  EXPECT_EQ(out, bytes_of("wxyz"));
  memory.free(*gpu);
  memory.free(host);
  EXPECT_EQ(memory.live_allocations(), 0u);
}

TEST(VerbsMemorySpace, ByteAccessOutsideALiveAllocationIsAnErrorNotAnOverrun) {
  VerbsMemorySpace memory;
  Buffer a = *memory.allocate(MemoryKind::kHostPinned, 0, 16);
  const std::vector<std::byte> data = bytes_of("0123456789");
  EXPECT_TRUE(memory.write_bytes(a, 6, data).is_ok());
  EXPECT_EQ(memory.write_bytes(a, 7, data).code(), StatusCode::kInvalidArgument);
  std::vector<std::byte> out(10);
  EXPECT_TRUE(memory.read_bytes(a, 6, out).is_ok());
  EXPECT_EQ(out, data);
  Buffer past = a;
  past.addr += 8;  // claims 16 bytes of which 8 lie past the allocation
  EXPECT_FALSE(memory.read_bytes(past, 0, out).is_ok());
  EXPECT_TRUE(memory.host_view(past).empty());
  memory.free(a);
  EXPECT_FALSE(memory.read_bytes(a, 0, out).is_ok()) << "freed memory is not readable";
  memory.free(a);  // a double free is ignored and counted
  EXPECT_EQ(memory.stray_frees(), 1u);
}

TEST(VerbsMemorySpace, CpuCopyChecksBothRangesAndCounts) {
  VerbsMemorySpace memory;
  Buffer src = *memory.allocate(MemoryKind::kHostPinned, 0, 8);
  Buffer dst = *memory.allocate(MemoryKind::kHostPageable, 0, 8);
  ASSERT_TRUE(memory.write_bytes(src, 0, bytes_of("abcdefgh")).is_ok());
  EXPECT_TRUE(memory.cpu_copy(dst, 2, src, 0, 6).is_ok());
  EXPECT_FALSE(memory.cpu_copy(dst, 3, src, 0, 6).is_ok());
  std::vector<std::byte> out(6);
  ASSERT_TRUE(memory.read_bytes(dst, 2, out).is_ok());
  EXPECT_EQ(out, bytes_of("abcdef"));
  EXPECT_EQ(memory.counters().cpu_copies, 1u);
  EXPECT_EQ(memory.counters().cpu_copy_bytes, 6u);
}

TEST(MonotonicClock, TimersFireFromTheLoopInDueOrderAndCancelledOnesNever) {
  MonotonicClock clock;
  std::vector<int> fired;
  // Due times only grow along this list, however slowly the machine runs.
  clock.schedule_after(0, [&] { fired.push_back(1); });
  clock.schedule_after(0, [&] { fired.push_back(2); });
  TimerId cancelled = clock.schedule_after(0, [&] { fired.push_back(99); });
  clock.schedule_after(2'000'000, [&] { fired.push_back(3); });
  TimerId far = clock.schedule_after(3'600'000'000'000, [&] { fired.push_back(100); });
  clock.cancel(cancelled);
  clock.cancel(TimerId{12345});  // unknown: a no-op
  EXPECT_TRUE(fired.empty()) << "nothing runs inside schedule_after";
  while (fired.size() < 3) clock.fire_due();
  EXPECT_EQ(fired, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(clock.now_ns(), 2'000'000);
  EXPECT_EQ(clock.pending(), 1u) << "the hour-long timer waits";
  clock.cancel(far);
  EXPECT_EQ(clock.pending(), 0u);
}

TEST(MonotonicClock, ACallbackMaySchedule) {
  MonotonicClock clock;
  int runs = 0;
  std::function<void()> again = [&] {
    if (++runs < 3) clock.schedule_after(0, again);
  };
  clock.schedule_after(0, again);
  clock.fire_due();
  EXPECT_EQ(runs, 3);
  EXPECT_FALSE(clock.next_due_ns().has_value());
}

TEST(VerbsCopyEngine, CopiesCompleteOnTheLoopNotInSubmit) {
  VerbsMemorySpace memory;
  VerbsCopyEngine engine(memory);
  Buffer src = *memory.allocate(MemoryKind::kHostPinned, 0, 4);
  Buffer dst = *memory.allocate(MemoryKind::kHostPinned, 0, 4);
  ASSERT_TRUE(memory.write_bytes(src, 0, bytes_of("wxyz")).is_ok());
  std::optional<Status> done;
  ASSERT_TRUE(engine.submit(dst, 0, src, 0, 4, [&](Status st) { done = st; }).is_ok());
  EXPECT_FALSE(done.has_value());
  EXPECT_EQ(engine.progress(), 1u);
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->is_ok());
  std::vector<std::byte> out(4);
  ASSERT_TRUE(memory.read_bytes(dst, 0, out).is_ok());
  EXPECT_EQ(out, bytes_of("wxyz"));
  EXPECT_EQ(engine.counters().bytes, 4u);
}

TEST(VerbsCopyEngine, RefusesUnallocatedGpuMemoryAndOutOfBoundsRangesAtSubmit) {
  VerbsMemorySpace memory;
  VerbsCopyEngine engine(memory);
  Buffer host = *memory.allocate(MemoryKind::kHostPinned, 0, 4);
  // A GPU buffer that is no live GPU allocation of this rank.
  Buffer gpu{host.addr, 4, MemoryKind::kDeviceNoGpuDirect, 2};
  Status st = engine.submit(gpu, 0, host, 0, 4, {});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not inside a live GPU allocation"), std::string::npos) << st.message();
  EXPECT_EQ(engine.submit(host, 1, host, 0, 4, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.pending(), 0u);
}

TEST(VerbsCopyEngine, MemoryFreedBeforeTheCopyRunsIsAnErrorCompletion) {
  VerbsMemorySpace memory;
  VerbsCopyEngine engine(memory);
  Buffer src = *memory.allocate(MemoryKind::kHostPinned, 0, 4);
  Buffer dst = *memory.allocate(MemoryKind::kHostPinned, 0, 4);
  std::optional<Status> done;
  ASSERT_TRUE(engine.submit(dst, 0, src, 0, 4, [&](Status s) { done = s; }).is_ok());
  memory.free(src);
  engine.progress();
  ASSERT_TRUE(done.has_value());
  EXPECT_FALSE(done->is_ok());
}

TEST(DeviceIpv4Address, ReadsTheFirstIpv4MappedGid) {
  EXPECT_EQ(ipv4_of_mapped_gid("0000:0000:0000:0000:0000:ffff:0a4d:0001\n"), "10.77.0.1");
  EXPECT_EQ(ipv4_of_mapped_gid("fe80:0000:0000:0000:5054:00ff:fe12:3456"), "");
  EXPECT_EQ(ipv4_of_mapped_gid("0000:0000:0000:0000:0000:0000:0000:0000"), "");
  EXPECT_EQ(ipv4_of_mapped_gid("0000:0000:0000:0000:0000:ffff:0a4d:00"), "");
  EXPECT_EQ(ipv4_of_mapped_gid("0000:0000:0000:0000:0000:ffff:0a4d:zz01"), "");

  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() /
                        ("tw-gids-" + std::to_string(::getpid()));
  fs::create_directories(root / "fake0/ports/1/gids");
  std::ofstream(root / "fake0/ports/1/gids/0") << "fe80:0000:0000:0000:5054:00ff:fe12:3456\n";
  std::ofstream(root / "fake0/ports/1/gids/1") << "0000:0000:0000:0000:0000:ffff:c0a8:0107\n";
  Result<std::string> ip = device_ipv4_address("fake0", 1, root.string());
  ASSERT_TRUE(ip.is_ok()) << ip.status().to_string();
  EXPECT_EQ(*ip, "192.168.1.7");
  Result<std::string> missing = device_ipv4_address("nosuch0", 1, root.string());
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("nosuch0"), std::string::npos);
  EXPECT_NE(missing.status().message().find("--address"), std::string::npos);
  EXPECT_FALSE(device_ipv4_address("../etc", 1, root.string()).is_ok());
  fs::remove_all(root);
}

// `world` coordinators on loopback; rank 0 on a port the kernel picked.
std::vector<std::unique_ptr<launch::TcpCoordinator>> coordinators(uint32_t world) {
  std::vector<std::unique_ptr<launch::TcpCoordinator>> out;
  const auto make = [world](const std::string& address, RankId r) {
    Result<std::unique_ptr<launch::TcpCoordinator>> c =
        launch::TcpCoordinator::create({address, r, world, milliseconds(5000)});
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    return std::move(c).value();
  };
  out.push_back(make("127.0.0.1:0", 0));
  const std::string address = "127.0.0.1:" + std::to_string(out[0]->port());
  for (RankId r = 1; r < world; ++r) out.push_back(make(address, r));
  std::vector<std::thread> joins;
  for (auto& c : out) joins.emplace_back([&c] { EXPECT_TRUE(c->join().is_ok()); });
  for (auto& t : joins) t.join();
  return out;
}

TEST(BlobAllGather, CarriesResultsLargerThanOneCoordinatorEntry) {
  auto cs = coordinators(3);
  const std::vector<std::string> mine = {std::string(5000, 'a'), "", std::string(1024, 'c')};
  std::vector<Result<std::vector<std::string>>> got(3, Status(StatusCode::kInternal, "unset"));
  std::vector<std::thread> threads;
  for (RankId r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] { got[r] = launch::all_gather_blobs(*cs[r], mine[r]); });
  }
  for (auto& t : threads) t.join();
  for (RankId r = 0; r < 3; ++r) {
    ASSERT_TRUE(got[r].is_ok()) << got[r].status().to_string();
    EXPECT_EQ(*got[r], mine);
  }
}

TEST(CoordinatorPhaseGate, AgreesOnlyOnceEveryRankIsDoneAndNeverInsidePhaseDone) {
  auto cs = coordinators(2);
  launch::CoordinatorPhaseGate gate0(*cs[0], milliseconds(5000));
  std::optional<Status> agreed;
  gate0.phase_done(1, 0, [&](Status st) { agreed = st; });
  EXPECT_FALSE(agreed.has_value());
  EXPECT_TRUE(gate0.waiting());
  // Rank 1 arrives only once rank 0 has seen that it cannot agree alone.
  std::atomic<bool> rank0_checked{false};
  std::atomic<bool> rank1_done{false};
  std::thread rank1([&] {
    while (!rank0_checked) std::this_thread::sleep_for(milliseconds(1));
    launch::CoordinatorPhaseGate gate1(*cs[1], milliseconds(5000));
    std::optional<Status> agreed1;
    gate1.phase_done(1, 0, [&](Status st) { agreed1 = st; });
    while (!gate1.poll()) std::this_thread::sleep_for(milliseconds(1));
    EXPECT_TRUE(agreed1.has_value() && agreed1->is_ok());
    rank1_done = true;
  });
  for (int i = 0; i < 20; ++i) {
    EXPECT_FALSE(gate0.poll());
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_FALSE(agreed.has_value());
  rank0_checked = true;
  while (!gate0.poll()) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  rank1.join();
  EXPECT_TRUE(rank1_done);
  ASSERT_TRUE(agreed.has_value());
  EXPECT_TRUE(agreed->is_ok()) << agreed->to_string();
  EXPECT_EQ(gate0.agreed_phases(), 1u);
}

TEST(CoordinatorPhaseGate, ARankThatLeavesFailsTheOthersBarrierNamingIt) {
  auto cs = coordinators(2);
  launch::CoordinatorPhaseGate gate0(*cs[0], milliseconds(20000));
  std::optional<Status> agreed;
  gate0.phase_done(3, 1, [&](Status st) { agreed = st; });
  cs[1].reset();  // rank 1 dies: its connection closes
  while (!gate0.poll()) std::this_thread::sleep_for(milliseconds(1));
  ASSERT_TRUE(agreed.has_value());
  EXPECT_FALSE(agreed->is_ok());
  EXPECT_NE(agreed->message().find("step 3 phase 2"), std::string::npos) << agreed->message();
  EXPECT_NE(agreed->message().find("rank 1"), std::string::npos) << agreed->message();
}

}  // namespace
}  // namespace tensorwire::verbs
