// Simulated memory, registration and the copy engine.
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <random>

#include "backend_sim/scheduler.h"
#include "backend_sim/sim_memory.h"
#include "backend_sim/zeroed_bytes_pool.h"
#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

Cluster with_gpus() {
  Cluster c;
  c.nodes = 2;
  c.gpus_per_node = 2;
  c.gpu_direct = {{true, false}, {true, false}};
  return c;
}

TEST(SimMemory, AllocationsGetDistinctAddressesEvenAtZeroBytes) {
  SimFixture f(with_gpus());
  MemorySpace& m = f.env(0).memory;
  Buffer a = *m.allocate(MemoryKind::kHostPinned, 0, 0);
  Buffer b = *m.allocate(MemoryKind::kHostPinned, 0, 0);
  Buffer g = *m.allocate(MemoryKind::kDeviceGpuDirect, 0, 100);
  EXPECT_NE(a.addr, b.addr);
  EXPECT_NE(a.addr, g.addr);
  m.free(a);
  Buffer c = *m.allocate(MemoryKind::kHostPinned, 0, 0);
  EXPECT_NE(c.addr, a.addr) << "addresses are never reused";
}

TEST(SimMemory, DeviceKindMustMatchTheGpusGpuDirect) {
  SimFixture f(with_gpus());
  MemorySpace& m = f.env(0).memory;
  EXPECT_TRUE(m.allocate(MemoryKind::kDeviceGpuDirect, 0, 8).is_ok());
  EXPECT_EQ(m.allocate(MemoryKind::kDeviceGpuDirect, 1, 8).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(m.allocate(MemoryKind::kDeviceNoGpuDirect, 1, 8).is_ok());
  EXPECT_EQ(m.allocate(MemoryKind::kDeviceNoGpuDirect, 2, 8).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(SimMemory, GpuWithoutGpuDirectCannotBeRegistered) {
  SimFixture f(with_gpus());
  Buffer g = *f.env(0).memory.allocate(MemoryKind::kDeviceNoGpuDirect, 1, 4096);
  Result<MemoryRegion> mr = f.env(0).nic.register_memory(g, Access::kRemoteWrite);
  ASSERT_FALSE(mr.is_ok());
  EXPECT_NE(mr.status().message().find("GPUDirect"), std::string::npos);
  Buffer direct = *f.env(0).memory.allocate(MemoryKind::kDeviceGpuDirect, 0, 4096);
  EXPECT_TRUE(f.env(0).nic.register_memory(direct, Access::kRemoteWrite).is_ok());
}

TEST(SimMemory, RegisteringMemoryThatIsNotAllocatedFails) {
  SimFixture f(with_gpus());
  Buffer b = *f.env(0).memory.allocate(MemoryKind::kHostPinned, 0, 64);
  Buffer beyond = b;
  beyond.length = 65;
  EXPECT_FALSE(f.env(0).nic.register_memory(beyond, Access::kNone).is_ok());
  f.env(0).memory.free(b);
  EXPECT_FALSE(f.env(0).nic.register_memory(b, Access::kNone).is_ok());
}

TEST(SimMemory, DeregisteringTwiceIsNotFound) {
  SimFixture f(with_gpus());
  MemoryRegion mr = f.region(0, 64, Access::kRemoteWrite);
  EXPECT_TRUE(f.env(0).nic.deregister_memory(mr).is_ok());
  EXPECT_EQ(f.env(0).nic.deregister_memory(mr).code(), StatusCode::kNotFound);
}

TEST(SimMemory, ByteAccessIsBoundsChecked) {
  SimFixture f(with_gpus());
  MemorySpace& m = f.env(0).memory;
  Buffer b = *m.allocate(MemoryKind::kHostPinned, 0, 16);
  std::vector<std::byte> data(8);
  EXPECT_TRUE(m.write_bytes(b, 8, data).is_ok());
  EXPECT_FALSE(m.write_bytes(b, 9, data).is_ok());
  EXPECT_FALSE(m.read_bytes(b, ~0ull, data).is_ok());
  Buffer other = *m.allocate(MemoryKind::kHostPinned, 0, 4);
  EXPECT_FALSE(m.cpu_copy(other, 0, b, 0, 8).is_ok());
  EXPECT_EQ(m.host_view(b).size(), 16u);
  Buffer g = *m.allocate(MemoryKind::kDeviceGpuDirect, 0, 16);
  EXPECT_TRUE(m.host_view(g).empty()) << "device memory has no CPU view";
  EXPECT_FALSE(m.cpu_copy(b, 0, g, 0, 8).is_ok()) << "the CPU does not copy device memory";
}

TEST(SimMemory, TimingOnlyModeHoldsNoBytes) {
  SimFixture f(with_gpus(), /*payload=*/false);
  MemorySpace& m = f.env(0).memory;
  EXPECT_FALSE(m.holds_payload());
  Buffer b = *m.allocate(MemoryKind::kHostPinned, 0, 1ull << 36);  // 64 GiB costs nothing
  EXPECT_TRUE(m.host_view(b).empty());
  Buffer small = *m.allocate(MemoryKind::kHostPinned, 0, 4096);
  EXPECT_EQ(m.host_view(small).size(), 4096u) << "small buffers (control messages) keep bytes";
  std::vector<std::byte> out(4);
  EXPECT_EQ(m.read_bytes(b, 0, out).code(), StatusCode::kUnavailable);
}

// The NIC's read lookup: live with bytes, live without (timing-only, large),
// a range across an allocation's end, and a freed allocation.
TEST(SimMemory, ReadViewFindsLiveAllocationsAndTheirBytes) {
  SimFixture f(with_gpus(), /*payload=*/false);
  auto& m = dynamic_cast<SimMemorySpace&>(f.env(0).memory);
  Buffer small = *m.allocate(MemoryKind::kHostPinned, 0, 4096);
  ASSERT_EQ(m.host_view(small).size(), 4096u);  // gives it bytes
  Buffer large = *m.allocate(MemoryKind::kHostPinned, 0, 1ull << 30);
  SimMemorySpace::ReadView v = m.read_view(small.addr + 100, 50);
  EXPECT_TRUE(v.live);
  ASSERT_EQ(v.bytes.size(), 50u);
  EXPECT_EQ(v.bytes.data(), m.bytes_at(small.addr + 100, 50).data());
  v = m.read_view(large.addr, 4096);
  EXPECT_TRUE(v.live);
  EXPECT_TRUE(v.bytes.empty()) << "timing-only: a large allocation holds no bytes";
  v = m.read_view(small.addr + 4000, 200);
  EXPECT_FALSE(v.live) << "past the allocation's end";
  EXPECT_EQ(m.find(small.addr + 4000, 200), nullptr);
  m.free(small);
  v = m.read_view(small.addr, 8);
  EXPECT_FALSE(v.live) << "freed";
  EXPECT_TRUE(v.bytes.empty());
}

TEST(SimMemory, PayloadModeRefusesMoreThanItsLimit) {
  SimFixture f(with_gpus(), /*payload=*/true);
  Result<Buffer> huge = f.env(0).memory.allocate(MemoryKind::kHostPinned, 0, 1ull << 40);
  ASSERT_FALSE(huge.is_ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceLimit);
  EXPECT_NE(huge.status().message().find("timing"), std::string::npos);
}

// The limit over all ranks (--memory-limit): what one rank holds counts
// against what another may allocate, the error names the limit, the bytes
// asked and held and what to do, and freeing makes room again.
TEST(SimMemory, PayloadModeRefusesMoreThanItsTotalLimitOverAllRanks) {
  SimOptions options;
  options.payload_limit_bytes_total = 1 << 20;
  SimFixture f(with_gpus(), options);
  Buffer first = *f.env(0).memory.allocate(MemoryKind::kHostPinned, 0, 600 << 10);
  Result<Buffer> second = f.env(1).memory.allocate(MemoryKind::kHostPinned, 0, 600 << 10);
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().code(), StatusCode::kResourceLimit);
  const std::string why = second.status().message();
  for (const char* part : {"rank 1", "1048576 bytes", "614400 bytes", "600 KiB held",
                           "timing mode", "--memory-limit"}) {
    EXPECT_NE(why.find(part), std::string::npos) << part << " missing from: " << why;
  }
  f.env(0).memory.free(first);
  EXPECT_TRUE(f.env(1).memory.allocate(MemoryKind::kHostPinned, 0, 600 << 10).is_ok());
  // Timing-only mode holds no tensor bytes: the limit does not apply to them.
  options.payload = false;
  SimFixture timing(with_gpus(), options);
  EXPECT_TRUE(timing.env(0).memory.allocate(MemoryKind::kHostPinned, 0, 1ull << 36).is_ok());
}

TEST(SimCopyEngine, CopiesBetweenHostAndDeviceAndRejectsRangesOutsideABuffer) {
  SimFixture f(with_gpus());
  RankEnv e = f.env(0);
  Buffer h = *e.memory.allocate(MemoryKind::kHostPinned, 0, 1024);
  Buffer h2 = *e.memory.allocate(MemoryKind::kHostPinned, 0, 1024);
  Buffer g = *e.memory.allocate(MemoryKind::kDeviceNoGpuDirect, 1, 1024);
  std::vector<std::byte> data(1024, std::byte{0x42});
  ASSERT_TRUE(e.memory.write_bytes(h, 0, data).is_ok());
  EXPECT_EQ(e.copy_engine.submit(h2, 1020, h, 0, 8, [](Status) {}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(e.copy_engine.submit(g, 1000, h, 0, 100, [](Status) {}).code(),
            StatusCode::kInvalidArgument);
  int done = 0;
  ASSERT_TRUE(e.copy_engine.submit(g, 0, h, 0, 1024, [&](Status st) {
    EXPECT_TRUE(st.is_ok());
    ++done;
  }).is_ok());
  f.sim().run();
  EXPECT_EQ(done, 1);
  std::vector<std::byte> got(1024);
  ASSERT_TRUE(e.memory.read_bytes(g, 0, got).is_ok());
  EXPECT_EQ(got, data);
  EXPECT_EQ(f.sim().stats(0).copy_engine_copies, 1u);
}

TEST(SimCopyEngine, CopiesOnOneEngineRunOneAfterAnother) {
  Cluster c = with_gpus();
  c.pcie_bandwidth_bytes_per_s = 10e9;
  c.pcie_latency_ns = 1000;
  SimFixture f(c, false);
  RankEnv e = f.env(0);
  Buffer h = *e.memory.allocate(MemoryKind::kHostPinned, 0, 10'000'000);
  Buffer g = *e.memory.allocate(MemoryKind::kDeviceGpuDirect, 0, 10'000'000);
  std::vector<TimeNs> done;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(e.copy_engine.submit(g, 0, h, 0, 10'000'000, [&](Status) {
      done.push_back(f.sim().now_ns());
    }).is_ok());
  }
  f.sim().run();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0], 1'000'000 + 1000);
  EXPECT_EQ(done[1], 2'000'000 + 1000);
}

TEST(SimCopyEngine, HostToHostIsAMemcpyOnTheRanksCpuTimeline) {
  Cluster c = with_gpus();
  c.host_memcpy_bandwidth_bytes_per_s = 10e9;
  SimFixture f(c);
  RankEnv e = f.env(0);
  Buffer a = *e.memory.allocate(MemoryKind::kHostPinned, 0, 1'000'000);
  Buffer b = *e.memory.allocate(MemoryKind::kHostPageable, 0, 1'000'000);
  std::vector<std::byte> data(1'000'000, std::byte{0x17});
  ASSERT_TRUE(e.memory.write_bytes(a, 0, data).is_ok());
  std::vector<TimeNs> done;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(e.copy_engine.submit(b, 0, a, 0, 1'000'000, [&](Status st) {
      EXPECT_TRUE(st.is_ok());
      done.push_back(f.sim().now_ns());
    }).is_ok());
  }
  f.sim().run();
  // 1 MB at 10 GB/s = 100 us each, one after the other on the one CPU.
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0], 100'000);
  EXPECT_EQ(done[1], 200'000);
  std::vector<std::byte> got(1'000'000);
  ASSERT_TRUE(e.memory.read_bytes(b, 0, got).is_ok());
  EXPECT_EQ(got, data);
  EXPECT_EQ(f.sim().stats(0).cpu_copy_bytes, 2'000'000u);
  EXPECT_EQ(f.sim().stats(0).copy_engine_copies, 0u);
}

TEST(SimCopyEngine, DeviceToDeviceUsesNvlinkWhereTheNodeHasIt) {
  for (double nvlink : {0.0, 100e9}) {
    Cluster c = with_gpus();
    c.pcie_bandwidth_bytes_per_s = 10e9;
    c.pcie_latency_ns = 1000;
    c.nvlink_bandwidth_bytes_per_s = nvlink;
    c.nvlink_latency_ns = 500;
    SimFixture f(c, false);
    RankEnv e = f.env(0);
    Buffer g0 = *e.memory.allocate(MemoryKind::kDeviceGpuDirect, 0, 10'000'000);
    Buffer g1 = *e.memory.allocate(MemoryKind::kDeviceNoGpuDirect, 1, 10'000'000);
    TimeNs at = -1;
    ASSERT_TRUE(e.copy_engine.submit(g1, 0, g0, 0, 10'000'000, [&](Status) {
      at = f.sim().now_ns();
    }).is_ok());
    f.sim().run();
    EXPECT_EQ(at, nvlink > 0 ? 100'000 + 500 : 1'000'000 + 1000) << "nvlink " << nvlink;
  }
}

// First come, first served: a scheduler only so that the simulator digests.
class InOrder final : public Scheduler {
 public:
  size_t pick(std::span<const ReadyEvent> /*ready*/) override { return 0; }
};

// Counts the uses a model checker would hear of.
class UseCounter final : public Scheduler {
 public:
  size_t pick(std::span<const ReadyEvent> /*ready*/) override { return 0; }
  void used(const SharedObject& /*object*/) override { ++uses; }
  size_t uses = 0;
};

// Allocating, registering, freeing and deregistering are uses of memory, up
// to the report: the teardown after it (report_taken) is no event, so a
// model checker hears of none of its frees and deregistrations.
TEST(SimMemory, TheTeardownAfterTheReportIsNoUse) {
  SimFixture f(with_gpus());
  auto counter = std::make_unique<UseCounter>();
  UseCounter* c = counter.get();
  f.sim().set_scheduler(std::move(counter));
  RankEnv env = f.env(0);
  Buffer kept = *env.memory.allocate(MemoryKind::kHostPinned, 0, 4096);
  MemoryRegion region = *env.nic.register_memory(kept, Access::kLocalWrite);
  Buffer freed = *env.memory.allocate(MemoryKind::kHostPinned, 0, 64);
  ASSERT_GT(c->uses, 0u);
  size_t before = c->uses;
  env.memory.free(freed);
  EXPECT_GT(c->uses, before) << "a free during the run is a use";
  f.sim().report_taken();
  before = c->uses;
  EXPECT_TRUE(env.nic.deregister_memory(region).is_ok());
  env.memory.free(kept);
  EXPECT_EQ(c->uses, before);
}

// In the teardown after the report, a free gives the allocation's bytes
// back to the thread's pool once (a second free, and the world's end, give
// nothing more), and deregistering cannot fail: the indexes and the
// registry go with the world.
TEST(SimMemory, TheTeardownGivesTheBytesBackOnce) {
  ZeroedBytesPool& pool = ZeroedBytesPool::local();
  constexpr uint64_t kBytes = 8192;
  uint64_t after_free = 0;
  uint64_t expected = 0;
  {
    SimFixture f(with_gpus());
    RankEnv env = f.env(0);
    Buffer b = *env.memory.allocate(MemoryKind::kHostPinned, 0, kBytes);
    std::vector<std::byte> ones(100, std::byte{1});
    ASSERT_TRUE(env.memory.write_bytes(b, 10, ones).is_ok());
    MemoryRegion region = *env.nic.register_memory(b, Access::kLocalWrite);
    f.sim().report_taken();
    const uint64_t before = pool.pooled_bytes();
    expected = before + kBytes <= ZeroedBytesPool::kMaxPooledBytes ? before + kBytes : before;
    env.memory.free(b);
    after_free = pool.pooled_bytes();
    EXPECT_EQ(after_free, expected) << "the bytes went back to the pool";
    env.memory.free(b);
    EXPECT_EQ(pool.pooled_bytes(), after_free) << "a second free gives nothing";
    EXPECT_TRUE(env.nic.deregister_memory(region).is_ok());
    EXPECT_TRUE(env.nic.deregister_memory(region).is_ok()) << "the registry goes with the world";
  }
  EXPECT_EQ(pool.pooled_bytes(), after_free) << "the world's end gives back only what was never freed";
  // A block taken from the pool is zero, the written bytes included.
  ZeroedBytes taken = pool.take(kBytes);
  ASSERT_EQ(taken.size(), kBytes);
  for (uint64_t i = 0; i < kBytes; ++i) ASSERT_EQ(taken.data()[i], std::byte{0}) << "byte " << i;
}

// The state digest follows every change of a rank's memory (each kept
// between digests until something changes): allocations, frees and writes
// by each path change it; putting the bytes back restores it.
TEST(SimMemory, StateDigestFollowsEveryChangeOfMemory) {
  SimFixture f(with_gpus());
  f.sim().set_scheduler(std::make_unique<InOrder>());
  MemorySpace& m = f.env(1).memory;
  Buffer b = *m.allocate(MemoryKind::kHostPinned, 0, 1000);
  const uint64_t zeros = f.sim().state_digest();
  EXPECT_EQ(f.sim().state_digest(), zeros) << "nothing changed";
  std::vector<std::byte> ones(10, std::byte{1});
  ASSERT_TRUE(m.write_bytes(b, 600, ones).is_ok());
  const uint64_t written = f.sim().state_digest();
  EXPECT_NE(written, zeros);
  std::span<std::byte> view = m.host_view(b);
  ASSERT_EQ(view.size(), 1000u);
  std::fill(view.begin() + 600, view.begin() + 610, std::byte{0});
  EXPECT_EQ(f.sim().state_digest(), zeros) << "the same bytes again";
  Buffer src = *m.allocate(MemoryKind::kHostPinned, 0, 10);
  const uint64_t two = f.sim().state_digest();
  EXPECT_NE(two, zeros);
  ASSERT_TRUE(m.write_bytes(src, 0, ones).is_ok());
  const uint64_t src_written = f.sim().state_digest();
  EXPECT_NE(src_written, two);
  ASSERT_TRUE(m.cpu_copy(b, 0, src, 0, 10).is_ok());
  EXPECT_NE(f.sim().state_digest(), src_written) << "a copy changes the destination";
  m.free(src);
  EXPECT_NE(f.sim().state_digest(), src_written);
}


// What find() should answer, from a plain map of the live allocations: the
// allocation with the greatest start at or below the address, when it holds
// the whole range. Each step draws from `rng` in the same order as before.
struct LiveAllocations {
  std::map<uint64_t, Buffer> live;  // by address

  void allocate(SimMemorySpace& m, MemoryKind kind, uint64_t bytes) {
    Buffer b = *m.allocate(kind, 0, bytes);
    live[b.addr] = b;
  }
  void free_one(SimMemorySpace& m, std::mt19937_64& rng) {
    auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
    m.free(it->second);
    live.erase(it);
  }
  // A lookup up to `reach` bytes past an allocation drawn at random.
  void check_lookup(const SimMemorySpace& m, std::mt19937_64& rng, uint64_t reach) const {
    const Buffer& near = std::next(live.begin(), static_cast<long>(rng() % live.size()))->second;
    const uint64_t addr = near.addr - 64 + rng() % (near.length + reach);
    const uint64_t length = rng() % 3 == 0 ? 0 : 1 + rng() % 200;
    const Buffer* want = expected(addr, length);
    const Buffer* got = m.find(addr, length);
    ASSERT_EQ(got == nullptr, want == nullptr) << "lookup of " << length << " bytes at " << addr;
    if (got != nullptr) {
      ASSERT_EQ(got->addr, want->addr) << "lookup of " << length << " bytes at " << addr;
    }
  }
  const Buffer* expected(uint64_t addr, uint64_t length) const {
    auto it = live.upper_bound(addr);
    if (it == live.begin()) return nullptr;
    --it;
    return it->second.contains(addr, length) ? &it->second : nullptr;
  }
};

// SimMemorySpace remembers its last few lookups; find() must still answer as
// a plain search of the live allocations does. Drawn allocations, frees,
// reuse of freed addresses (adversarial mode) and a planted allocator bug
// that starts allocations inside others, each followed by lookups near the
// allocations, checked against a model.
TEST(SimMemory, FindAnswersAsAPlainSearchThroughAllocationsFreesAndReuse) {
  std::mt19937_64 rng(31);
  for (int round = 0; round < 40; ++round) {
    SimOptions options;
    options.payload = false;
    options.adversarial_memory = round % 2 == 0;
    options.plant_overlapping_allocations = round % 4 == 1;
    SimFixture f(Cluster{}, options);
    auto& m = dynamic_cast<SimMemorySpace&>(f.env(0).memory);
    LiveAllocations model;
    for (int op = 0; op < 400; ++op) {
      const uint64_t pick = rng() % 10;
      if (pick < 3 || model.live.empty()) {
        model.allocate(m, MemoryKind::kHostPinned, 1 + rng() % 5000);
      } else if (pick < 5) {
        model.free_one(m, rng);
      } else {
        ASSERT_NO_FATAL_FAILURE(model.check_lookup(m, rng, 6000)) << "round " << round << " op " << op;
      }
    }
  }
}

// The index of allocation starts at the size of a parameter server's rank:
// thousands of allocations in two address regions (host memory and a GPU's,
// so that host allocations land between starts already indexed), frees
// enough to compact the index, and lookups anywhere, against a plain search.
TEST(SimMemory, FindAnswersAsAPlainSearchAcrossManyBlocksOfStarts) {
  std::mt19937_64 rng(64);
  for (int round = 0; round < 4; ++round) {
    SimOptions options;
    options.payload = false;
    options.adversarial_memory = round % 2 == 1;
    Cluster cluster;
    cluster.gpus_per_node = 1;
    SimFixture f(cluster, options);
    auto& m = dynamic_cast<SimMemorySpace&>(f.env(0).memory);
    LiveAllocations model;
    for (int op = 0; op < 6000; ++op) {
      const uint64_t pick = rng() % 10;
      // Growing for the first half, shrinking after: the index compacts.
      const bool grow = op < 3000 ? pick < 5 : pick < 2;
      if (grow || model.live.empty()) {
        const MemoryKind kind = rng() % 2 == 0 ? MemoryKind::kHostPinned : MemoryKind::kDeviceGpuDirect;
        model.allocate(m, kind, 1 + rng() % 3000);
      } else if (pick < 6) {
        model.free_one(m, rng);
      } else {
        ASSERT_NO_FATAL_FAILURE(model.check_lookup(m, rng, 4000)) << "round " << round << " op " << op;
      }
    }
  }
}

}  // namespace
}  // namespace tensorwire::sim::testing
