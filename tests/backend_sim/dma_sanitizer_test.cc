// The DMA sanitizer's rules (backend_sim/dma_sanitizer.h), each through the
// simulator's own NIC, copy engine and memory: a violation becomes one safety
// problem naming the rank, the range and both operations; the legal patterns
// next to each rule stay silent.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

const Access kRw = Access::kLocalWrite | Access::kRemoteWrite;
const Access kRead = Access::kLocalWrite | Access::kRemoteRead;

Cluster two_nodes() {
  Cluster c;
  c.nodes = 2;
  c.gpus_per_node = 1;
  return c;
}

std::string all(const std::vector<Problem>& problems) { return problem_lines(problems); }

bool mentions(const Simulator& sim, const std::string& words) {
  return any_problem_mentions(sim.dma_problems(), words);
}

Status read(SimFixture& f, RankId from, RankId to, const MemoryRegion& dst,
            const MemoryRegion& src, uint32_t bytes, uint64_t wr_id = 1) {
  SendWorkRequest wr;
  wr.wr_id = wr_id;
  wr.opcode = WorkOpcode::kRdmaRead;
  wr.local = {dst.addr, bytes, dst.lkey};
  wr.remote_addr = src.addr;
  wr.rkey = src.rkey;
  return f.env(from).nic.post_send(f.env(from).nic.queue_pair_to(to), wr);
}

TEST(DmaSanitizer, AWriteThatCompletesBeforeItsBuffersGoIsSilent) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 4096, Access::kNone);
  MemoryRegion dst = f.region(1, 4096, kRw);
  ASSERT_TRUE(f.write(0, 1, src, dst, 4096, 7, true).is_ok());
  ASSERT_TRUE(f.recv(1, 0, dst, 0).is_ok());
  f.sim().run();
  std::vector<std::byte> out(4096);
  ASSERT_TRUE(f.env(1).memory.read_bytes(f.buffer_of(dst), 0, out).is_ok());
  ASSERT_TRUE(f.env(0).nic.deregister_memory(src).is_ok());
  f.env(0).memory.free(f.buffer_of(src));
  f.env(1).memory.free(f.buffer_of(dst));
  EXPECT_TRUE(f.sim().dma_problems().empty()) << all(f.sim().dma_problems());
}

TEST(DmaSanitizer, FreeingAWritesSourceWhileItIsInFlightIsNamed) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 4096, Access::kNone);
  MemoryRegion dst = f.region(1, 4096, kRw);
  ASSERT_TRUE(f.write(0, 1, src, dst, 4096, 17).is_ok());
  f.env(0).memory.free(f.buffer_of(src));  // the completion has not come
  f.sim().run();
  ASSERT_EQ(f.sim().dma_problems().size(), 1u) << all(f.sim().dma_problems());
  const Problem& p = f.sim().dma_problems()[0];
  EXPECT_EQ(p.kind, ProblemKind::kSafety);
  EXPECT_EQ(p.rank, RankId{0});
  EXPECT_EQ(p.peer, RankId{1});
  EXPECT_NE(p.text.find("rank 0: buffer 0x"), std::string::npos) << p.text;
  EXPECT_NE(p.text.find("+[0,4096) freed"), std::string::npos) << p.text;
  EXPECT_NE(p.text.find("RDMA write wr 17 (rank 0 -> rank 1"), std::string::npos) << p.text;
  EXPECT_NE(p.text.find("still reads it"), std::string::npos) << p.text;
}

TEST(DmaSanitizer, DeregisteringAWritesTargetWhileItIsInFlightIsNamed) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 4096, Access::kNone);
  MemoryRegion dst = f.region(1, 4096, kRw);
  ASSERT_TRUE(f.write(0, 1, src, dst, 4096, 3).is_ok());
  ASSERT_TRUE(f.env(1).nic.deregister_memory(dst).is_ok());
  f.sim().run();
  EXPECT_TRUE(mentions(f.sim(), "rank 1: buffer")) << all(f.sim().dma_problems());
  EXPECT_TRUE(mentions(f.sim(), "deregistered")) << all(f.sim().dma_problems());
  EXPECT_TRUE(mentions(f.sim(), "still writes it")) << all(f.sim().dma_problems());
}

// Early free during an RDMA read, at either end: the responder's source and
// the requester's destination both belong to the read until it completes.
TEST(DmaSanitizer, FreeingEitherEndOfAReadInFlightIsNamed) {
  SimFixture f(two_nodes());
  MemoryRegion dst = f.region(0, 1024, Access::kLocalWrite);
  MemoryRegion src = f.region(1, 1024, kRead);
  ASSERT_TRUE(read(f, 0, 1, dst, src, 1024, 9).is_ok());
  f.env(1).memory.free(f.buffer_of(src));
  f.env(0).memory.free(f.buffer_of(dst));
  f.sim().run();
  ASSERT_EQ(f.sim().dma_problems().size(), 2u) << all(f.sim().dma_problems());
  EXPECT_NE(f.sim().dma_problems()[0].text.find("rank 1: buffer"), std::string::npos);
  EXPECT_NE(f.sim().dma_problems()[0].text.find("RDMA read wr 9 (rank 0 -> rank 1"), std::string::npos);
  EXPECT_NE(f.sim().dma_problems()[0].text.find("still reads it"), std::string::npos);
  EXPECT_NE(f.sim().dma_problems()[1].text.find("still writes it"), std::string::npos);
}

TEST(DmaSanitizer, TheCpuReadingWhatADmaStillWritesIsARace) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 256, Access::kNone);
  MemoryRegion dst = f.region(1, 256, kRw);
  ASSERT_TRUE(f.write(0, 1, src, dst, 256, 5).is_ok());
  std::vector<std::byte> out(16);
  ASSERT_TRUE(f.env(1).memory.read_bytes(f.buffer_of(dst), 32, out).is_ok());
  f.sim().run();
  ASSERT_EQ(f.sim().dma_problems().size(), 1u) << all(f.sim().dma_problems());
  EXPECT_TRUE(mentions(f.sim(), "+[32,48) read by the CPU")) << all(f.sim().dma_problems());
}

TEST(DmaSanitizer, TheCpuWritingWhatADmaStillReadsIsARace) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 256, Access::kNone);
  MemoryRegion dst = f.region(1, 256, kRw);
  ASSERT_TRUE(f.write(0, 1, src, dst, 256, 5).is_ok());
  std::vector<std::byte> in(256, std::byte{1});
  ASSERT_TRUE(f.env(0).memory.write_bytes(f.buffer_of(src), 0, in).is_ok());
  // Reading what a DMA only reads is no race.
  ASSERT_TRUE(f.env(0).memory.read_bytes(f.buffer_of(src), 0, in).is_ok());
  f.sim().run();
  ASSERT_EQ(f.sim().dma_problems().size(), 1u) << all(f.sim().dma_problems());
  EXPECT_TRUE(mentions(f.sim(), "written by the CPU")) << all(f.sim().dma_problems());
}

TEST(DmaSanitizer, ACopyWritingWhatAnRdmaWriteStillReadsIsARace) {
  SimFixture f(two_nodes());
  RankEnv env = f.env(0);
  MemoryRegion src = f.region(0, 256, Access::kNone);
  MemoryRegion dst = f.region(1, 256, kRw);
  Result<Buffer> gpu = env.memory.allocate(MemoryKind::kDeviceGpuDirect, 0, 256);
  ASSERT_TRUE(gpu.is_ok());
  // Copying out of the source while the write reads it is no race...
  ASSERT_TRUE(f.write(0, 1, src, dst, 256, 5).is_ok());
  ASSERT_TRUE(env.copy_engine.submit(*gpu, 0, f.buffer_of(src), 0, 256, [](Status) {}).is_ok());
  f.sim().run();
  EXPECT_TRUE(f.sim().dma_problems().empty()) << all(f.sim().dma_problems());
  // ...refilling it is (the simulated NIC took the bytes at the post; a real
  // one may read the new ones).
  ASSERT_TRUE(f.write(0, 1, src, dst, 256, 6).is_ok());
  ASSERT_TRUE(env.copy_engine.submit(f.buffer_of(src), 0, *gpu, 0, 256, [](Status) {}).is_ok());
  f.sim().run();
  ASSERT_EQ(f.sim().dma_problems().size(), 1u) << all(f.sim().dma_problems());
  EXPECT_TRUE(mentions(f.sim(), "written by copy (rank 0")) << all(f.sim().dma_problems());
  EXPECT_TRUE(mentions(f.sim(), "while RDMA write wr 6")) << all(f.sim().dma_problems());
  EXPECT_TRUE(mentions(f.sim(), "still reads it")) << all(f.sim().dma_problems());
}

TEST(DmaSanitizer, TwoWritesInFlightToOverlappingRangesAreNamed) {
  SimFixture f(two_nodes());
  MemoryRegion a = f.region(0, 256, Access::kNone);
  MemoryRegion dst = f.region(1, 512, kRw);
  ASSERT_TRUE(f.write(0, 1, a, dst, 256, 1).is_ok());
  SendWorkRequest wr;  // the second write starts 128 bytes in: [128, 384) overlaps [0, 256)
  wr.wr_id = 2;
  wr.opcode = WorkOpcode::kRdmaWrite;
  wr.local = {a.addr, 256, a.lkey};
  wr.remote_addr = dst.addr + 128;
  wr.rkey = dst.rkey;
  ASSERT_TRUE(f.env(0).nic.post_send(f.env(0).nic.queue_pair_to(1), wr).is_ok());
  f.sim().run();
  ASSERT_EQ(f.sim().dma_problems().size(), 1u) << all(f.sim().dma_problems());
  EXPECT_TRUE(mentions(f.sim(), "+[0,128) written by RDMA write wr 2")) << all(f.sim().dma_problems());
  EXPECT_TRUE(mentions(f.sim(), "while RDMA write wr 1")) << all(f.sim().dma_problems());
}

TEST(DmaSanitizer, ACopyOwnsItsRangesUntilItIsDone) {
  SimFixture f(two_nodes());
  RankEnv env = f.env(0);
  Result<Buffer> host = env.memory.allocate(MemoryKind::kHostPinned, 0, 4096);
  Result<Buffer> gpu = env.memory.allocate(MemoryKind::kDeviceGpuDirect, 0, 4096);
  ASSERT_TRUE(host.is_ok() && gpu.is_ok());
  bool done = false;
  ASSERT_TRUE(env.copy_engine.submit(*gpu, 0, *host, 0, 4096, [&](Status) { done = true; }).is_ok());
  env.memory.free(*host);  // early free during a copy
  f.sim().run();
  EXPECT_TRUE(done);
  ASSERT_EQ(f.sim().dma_problems().size(), 1u) << all(f.sim().dma_problems());
  EXPECT_TRUE(mentions(f.sim(), "freed")) << all(f.sim().dma_problems());
  EXPECT_TRUE(mentions(f.sim(), "while copy (rank 0")) << all(f.sim().dma_problems());
  // After the copy, the destination is the CPU's again.
  std::vector<std::byte> out(4096);
  ASSERT_TRUE(env.memory.read_bytes(*gpu, 0, out).is_ok());
  EXPECT_EQ(f.sim().dma_problems().size(), 1u);
}

TEST(DmaSanitizer, AFlushedRequestNoLongerOwnsItsBuffers) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 4096, Access::kNone);
  MemoryRegion dst = f.region(1, 4096, kRw);
  ASSERT_TRUE(f.write(0, 1, src, dst, 4096, 1).is_ok());
  f.sim().break_queue_pair(0, 1);
  f.env(0).memory.free(f.buffer_of(src));
  f.env(1).memory.free(f.buffer_of(dst));
  f.sim().run();
  EXPECT_TRUE(f.sim().dma_problems().empty()) << all(f.sim().dma_problems());
}

// A write the NIC could not read (an lkey it does not know) never leaves, so
// it never lands: its target is the peer's again once it fails.
TEST(DmaSanitizer, AWriteThatFailsLocallyNoLongerOwnsItsTarget) {
  SimFixture f(two_nodes());
  MemoryRegion src = f.region(0, 256, Access::kNone);
  MemoryRegion dst = f.region(1, 256, kRw);
  MemoryRegion bad = src;
  bad.lkey = 999;
  ASSERT_TRUE(f.write(0, 1, bad, dst, 256, 1).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 1u);
  EXPECT_EQ(f.completions(0)[0].completion.status, CompletionStatus::kLocalProtectionError);
  f.env(1).memory.free(f.buffer_of(dst));
  EXPECT_TRUE(f.sim().dma_problems().empty()) << all(f.sim().dma_problems());
}

// A write with immediate that runs out of receiver-not-ready retries never
// lands either.
TEST(DmaSanitizer, AWriteOutOfRnrRetriesNoLongerOwnsItsTarget) {
  Cluster c = two_nodes();
  c.rnr_retry_count = 1;
  SimFixture f(c);
  MemoryRegion src = f.region(0, 256, Access::kNone);
  MemoryRegion dst = f.region(1, 256, kRw);
  ASSERT_TRUE(f.write(0, 1, src, dst, 256, 1, /*with_imm=*/true).is_ok());
  f.sim().run();
  ASSERT_EQ(f.completions(0).size(), 1u);
  EXPECT_EQ(f.completions(0)[0].completion.status, CompletionStatus::kRnrRetryExceeded);
  f.env(1).memory.free(f.buffer_of(dst));
  EXPECT_TRUE(f.sim().dma_problems().empty()) << all(f.sim().dma_problems());
}

TEST(DmaSanitizer, OverlappingLiveAllocationsAreNamed) {
  SimOptions options;
  options.plant_overlapping_allocations = true;
  NullTraceSink trace;
  Simulator sim(two_nodes(), options, trace);
  ASSERT_TRUE(sim.env(0).memory.allocate(MemoryKind::kHostPinned, 0, 4096).is_ok());
  ASSERT_TRUE(sim.env(0).memory.allocate(MemoryKind::kHostPinned, 0, 64).is_ok());
  ASSERT_EQ(sim.dma_problems().size(), 1u) << all(sim.dma_problems());
  EXPECT_TRUE(any_problem_mentions(sim.dma_problems(), "overlaps the live allocation"));
  // The simulator's own allocator never overlaps.
  Simulator fine(two_nodes(), SimOptions{}, trace);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(fine.env(0).memory.allocate(MemoryKind::kHostPinned, 0, 4096).is_ok());
  EXPECT_TRUE(fine.dma_problems().empty());
}

// Under the model checker freed memory is poisoned and reused first, so a
// write that outlives its buffer corrupts the next one's bytes; a plain run
// keeps addresses fresh.
TEST(AdversarialAllocator, FreedMemoryIsReusedFirstAndPoisoned) {
  SimOptions options;
  options.adversarial_memory = true;
  NullTraceSink trace;
  Simulator sim(two_nodes(), options, trace);
  MemorySpace& memory = sim.env(0).memory;
  Result<Buffer> a = memory.allocate(MemoryKind::kHostPinned, 0, 1024);
  ASSERT_TRUE(a.is_ok());
  std::vector<std::byte> ones(1024, std::byte{1});
  ASSERT_TRUE(memory.write_bytes(*a, 0, ones).is_ok());
  memory.free(*a);
  Result<Buffer> b = memory.allocate(MemoryKind::kHostPinned, 0, 512);
  Result<Buffer> c = memory.allocate(MemoryKind::kHostPinned, 0, 512);
  ASSERT_TRUE(b.is_ok() && c.is_ok());
  EXPECT_EQ(b->addr, a->addr);
  EXPECT_EQ(c->addr, a->addr + 512);  // what the first left over
  std::vector<std::byte> got(512);
  ASSERT_TRUE(memory.read_bytes(*b, 0, got).is_ok());
  EXPECT_NE(got[0], std::byte{0});
  EXPECT_NE(got[0], std::byte{1});
  Simulator plain(two_nodes(), SimOptions{}, trace);
  Result<Buffer> d = plain.env(0).memory.allocate(MemoryKind::kHostPinned, 0, 1024);
  plain.env(0).memory.free(*d);
  EXPECT_NE(plain.env(0).memory.allocate(MemoryKind::kHostPinned, 0, 1024)->addr, d->addr);
}

}  // namespace
}  // namespace tensorwire::sim::testing
