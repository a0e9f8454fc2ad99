// Broadcasts run end to end on the simulator: exact bytes at every destination,
// invariants held, planted bugs caught, faults reported rather than hung.

#include <gtest/gtest.h>

#include <array>
#include <span>

#include "backend_sim/simulator.h"
#include "core/protocols/realm_broadcast/broadcast_invariants.h"
#include "core/protocols/realm_broadcast/collective_message.h"
#include "core/protocols/realm_broadcast/transfer_operation.h"
#include "report/chrome_trace_writer.h"
#include "report/results_json.h"
#include "tests/protocols/realm_broadcast/broadcast_fixture.h"

namespace tensorwire::collectives {
namespace {

using testing::broadcast_scenario;
using testing::every_memory;
using testing::joined;
using testing::broadcast_of;
using testing::broadcast_workload_of;
using testing::run_broadcast_scenario;

bool mentions(const RunReport& r, const std::string& what) {
  return any_problem_mentions(r.problems, what);
}

TEST(BroadcastRun, EveryAlgorithmAndRadixDeliversTheExactSourceBytes) {
  const uint64_t bytes = (3 << 20) + 13;  // not a multiple of 4 KiB
  for (uint32_t algorithm = 0; algorithm < kBroadcastAlgorithms; ++algorithm) {
    for (uint32_t inter : {1u, 2u, 3u}) {
      for (uint32_t intra : {0u, 1u, 2u}) {
        if (algorithm != 2 && (inter != 2 || intra != 2)) continue;
        BroadcastOptions o;
        o.algorithm = static_cast<BroadcastAlgorithm>(algorithm);
        o.radix_inter = inter;
        o.radix_intra = intra;
        o.ib_buffer_max_bytes = 256 << 10;  // rings wrap several times
        Scenario s = broadcast_scenario(4, 3, bytes, MemoryId::gpu_of(2, 1), every_memory(4, 3), o);
        s.cluster.gpu_direct = {{true, false, true}, {false, false, false}, {true, false, true},
                                {false, true, false}};
        NullTraceSink trace;
        RunReport r = run_broadcast_scenario(s, {}, trace);
        EXPECT_TRUE(r.passed()) << "algorithm " << algorithm << " inter " << inter << " intra "
                                << intra << "\n" << joined(r.problems);
        EXPECT_EQ(broadcast_of(r).destinations.size(), 16u);
        for (const auto& d : broadcast_of(r).destinations) EXPECT_GT(d.done_ns, 0) << d.memory;
        EXPECT_GE(broadcast_of(r).finish_ns, broadcast_of(r).bound.busiest_link_ns);
      }
    }
  }
}

TEST(BroadcastRun, RadixTreeBeatsNaiveWhenTheSourceNicIsTheBottleneck) {
  std::vector<MemoryId> dests;
  for (uint32_t n = 0; n < 8; ++n) {
    for (uint32_t g = 0; g < 4; ++g) dests.push_back(MemoryId::gpu_of(n, g));
  }
  BroadcastOptions naive;
  naive.algorithm = BroadcastAlgorithm::kNaive;
  NullTraceSink trace;
  RunReport slow = run_broadcast_scenario(
      broadcast_scenario(8, 4, 64 << 20, MemoryId::gpu_of(0, 0), dests, naive, false), {}, trace);
  RunReport fast = run_broadcast_scenario(
      broadcast_scenario(8, 4, 64 << 20, MemoryId::gpu_of(0, 0), dests, {}, false), {}, trace);
  ASSERT_TRUE(slow.passed()) << joined(slow.problems);
  ASSERT_TRUE(fast.passed()) << joined(fast.problems);
  EXPECT_LT(broadcast_of(fast).finish_ns * 3, broadcast_of(slow).finish_ns);
  // The naive plan's busiest link is the source's NIC: 28 copies leave it.
  EXPECT_EQ(broadcast_of(slow).link_names[broadcast_of(slow).bound.busiest_link.value], "node0/nic tx");
}

// With a slow network and a fast PCIe link, one host IB buffer on node0 feeds a
// fast local consumer and a slow network consumer; its ring is small, so its
// producer keeps waiting for the slower one.
Scenario slow_and_fast_consumers(BroadcastAlgorithm algorithm = BroadcastAlgorithm::kAggregation) {
  BroadcastOptions o;
  o.algorithm = algorithm;
  o.ib_buffer_max_bytes = 16 << 10;
  o.min_chunk_bytes = 4096;
  o.max_chunk_bytes = 4096;
  Scenario s = broadcast_scenario(2, 2, 1 << 20, MemoryId::gpu_of(0, 0),
                                  {MemoryId::gpu_of(0, 1), MemoryId::host(1)}, o);
  s.cluster.gpu_direct = {{false, false}, {false, false}};
  s.cluster.nic_bandwidth_bytes_per_s = 1e9;
  return s;
}

TEST(BroadcastRun, AProducerWaitsForItsSlowestConsumer) {
  NullTraceSink trace;
  RunReport r = run_broadcast_scenario(slow_and_fast_consumers(), {}, trace);
  ASSERT_TRUE(r.passed()) << joined(r.problems);
  // 1 MiB through 16 KiB rings: the slow consumer's BYTES_READ drove it.
  EXPECT_GT(counter_value(report::total_protocol_counters(r), "chunks"), 3u * (1 << 20) / 4096 - 1);
}

TEST(BroadcastRun, InvariantsCatchAProducerThatWaitsOnlyForTheFastestConsumer) {
  NullTraceSink trace;
  RunReport r =
      run_broadcast_scenario(slow_and_fast_consumers(), {}, trace, PlantedCollectiveBug::kMaxConsumerRead);
  EXPECT_FALSE(r.passed());
  EXPECT_TRUE(mentions(r, "overwrites")) << joined(r.problems);
  // And the slow consumer's destination got someone else's bytes.
  EXPECT_TRUE(mentions(r, "differs from the source")) << joined(r.problems);
}

TEST(BroadcastRun, InvariantsCatchAnIbBufferFreedAtItsFirstConsumer) {
  NullTraceSink trace;
  RunReport r =
      run_broadcast_scenario(slow_and_fast_consumers(), {}, trace, PlantedCollectiveBug::kFreeAtFirstConsumer);
  EXPECT_FALSE(r.passed());
  EXPECT_TRUE(mentions(r, "freed while its consumer")) << joined(r.problems);
}

TEST(BroadcastRun, ZeroBytesCompletesEveryDestinationAndFreesEveryIbBuffer) {
  Scenario s = broadcast_scenario(3, 1, 0, MemoryId::gpu_of(0, 0), every_memory(3, 1));
  s.cluster.gpu_direct = {{false}, {false}, {false}};
  NullTraceSink trace;
  RunReport r = run_broadcast_scenario(s, {}, trace);
  EXPECT_TRUE(r.passed()) << joined(r.problems);
  EXPECT_GT(broadcast_of(r).graph.ib_buffer_count(), 0u);
  for (const auto& d : broadcast_of(r).destinations) EXPECT_GE(d.done_ns, 0) << d.memory;
}

TEST(BroadcastRun, SameSeedGivesTheSameResultsAndTraceByteForByte) {
  Scenario s = slow_and_fast_consumers(BroadcastAlgorithm::kRadixTree);
  std::string json[2];
  std::string trace_text[2];
  for (int i = 0; i < 2; ++i) {
    report::ChromeTraceWriter trace;
    RunReport r = run_broadcast_scenario(s, {}, trace);
    ASSERT_TRUE(r.passed()) << joined(r.problems);
    json[i] = report::results_json_text(r);
    trace_text[i] = trace.to_json();
  }
  EXPECT_EQ(json[0], json[1]);
  EXPECT_EQ(trace_text[0], trace_text[1]);
  EXPECT_NE(trace_text[0].find("collective c"), std::string::npos);  // every stage has a track
}

TEST(BroadcastRun, DotShowsEveryBufferAndCopyWithBytesAndBusyTimes) {
  NullTraceSink trace;
  RunReport r = run_broadcast_scenario(slow_and_fast_consumers(), {}, trace);
  ASSERT_NE(r.collective, nullptr);
  const std::string dot = r.collective->graph_dot(r.scenario_name);
  EXPECT_EQ(dot.rfind("// tensorwire plan", 0), 0u);
  EXPECT_NE(dot.find("digraph transfer_graph"), std::string::npos);
  for (const auto& c : broadcast_of(r).graph.copies) {
    EXPECT_NE(dot.find("b" + std::to_string(c.from) + " -> b" + std::to_string(c.to)),
              std::string::npos);
  }
  EXPECT_NE(dot.find("busy from"), std::string::npos);
  EXPECT_NE(dot.find("1.00 MiB"), std::string::npos);
}

// Drives TransferOperations directly, for faults the runner does not inject.
struct DirectRun {
  explicit DirectRun(Scenario s)
      : scenario(std::move(s)), topology(scenario.cluster),
        graph(*plan_broadcast(topology, broadcast_workload_of(scenario).source, broadcast_workload_of(scenario).destinations,
                              broadcast_workload_of(scenario).bytes, broadcast_workload_of(scenario).options)),
        simulator(scenario.cluster, sim::SimOptions{1, false}, trace), invariants(graph) {
    for (RankId r = 0; r < simulator.world_size(); ++r) {
      ops.push_back(std::make_unique<TransferOperation>(simulator.env(r), graph, topology,
                                                        broadcast_workload_of(scenario).options, &invariants));
      std::map<uint32_t, Buffer> instances;
      for (const auto& b : graph.buffers) {
        if (b.role == BufferRole::kIB || b.memory.node != r) continue;
        instances[b.id] = *simulator.env(r).memory.allocate(topology.kind_of(b.memory),
                                                            topology.device_of(b.memory), graph.bytes);
      }
      EXPECT_TRUE(ops.back()->start(instances).is_ok());
    }
  }
  Scenario scenario;
  ClusterTopology topology;
  TransferGraph graph;
  NullTraceSink trace;
  sim::Simulator simulator;
  BroadcastInvariants invariants;
  std::vector<std::unique_ptr<TransferOperation>> ops;
};

TEST(BroadcastRun, ARankThatCrashesMidwayFailsItsPeersWithAnErrorNotAHang) {
  DirectRun run(broadcast_scenario(3, 0, 64 << 20, MemoryId::host(0),
                                   {MemoryId::host(1), MemoryId::host(2)}, {}, false));
  run.simulator.run_until(1'000'000);  // 1 ms: well inside the ~5 ms transfer
  ASSERT_FALSE(run.ops[1]->finished());
  run.simulator.crash_rank(1);
  run.simulator.run();  // returns: nothing waits for ever
  EXPECT_FALSE(run.ops[0]->status().is_ok());
  EXPECT_NE(run.ops[0]->status().to_string().find("rank 1"), std::string::npos)
      << run.ops[0]->status().to_string();
}

// Does rank `a` run a network copy to rank `b`, or `b` to `a`?
bool peers_in_plan(const TransferGraph& graph, RankId a, RankId b) {
  for (const TransferCopy& c : graph.copies) {
    if (!c.hop.network) continue;
    if ((c.rank() == a && c.hop.to.node == b) || (c.rank() == b && c.hop.to.node == a)) return true;
  }
  return false;
}

// A radix-2 tree over four nodes: 0 feeds 1 and 2, 1 feeds 3. When the queue
// pair between 0 and 1 breaks, 0 and 1 fail with the QP error; 2 and 3 are
// told (ABORT) and end with kAborted, 3 through 1, as it has no queue pair to
// 0: no live rank is left waiting, and no invariant breaks on the way.
TEST(BroadcastRun, ABrokenQueuePairEndsEveryRankWithAnErrorPassedOnByAbort) {
  BroadcastOptions o;
  o.algorithm = BroadcastAlgorithm::kRadixTree;
  o.radix_inter = 2;
  DirectRun run(broadcast_scenario(4, 0, 64 << 20, MemoryId::host(0),
                                   {MemoryId::host(1), MemoryId::host(2), MemoryId::host(3)}, o, false));
  ASSERT_TRUE(peers_in_plan(run.graph, 1, 3));
  ASSERT_FALSE(peers_in_plan(run.graph, 0, 3)) << "rank 3 must hear of the failure through rank 1";
  run.simulator.run_until(1'000'000);  // 1 ms: well inside the transfer
  for (const auto& op : run.ops) ASSERT_FALSE(op->finished());
  run.simulator.break_queue_pair(0, 1);
  run.simulator.run();
  EXPECT_EQ(run.ops[0]->status().code(), StatusCode::kQpError) << run.ops[0]->status().to_string();
  EXPECT_EQ(run.ops[1]->status().code(), StatusCode::kQpError) << run.ops[1]->status().to_string();
  for (RankId r : {2u, 3u}) {
    const Status& st = run.ops[r]->status();
    EXPECT_EQ(st.code(), StatusCode::kAborted) << r << ": " << st.to_string();
    EXPECT_NE(st.message().find("failed (QP_ERROR)"), std::string::npos) << st.message();
  }
  EXPECT_NE(run.ops[3]->status().message().find("rank 1 passed on"), std::string::npos)
      << run.ops[3]->status().message();
  EXPECT_TRUE(run.invariants.ok()) << run.invariants.violations().front();
  const size_t abort = static_cast<size_t>(CollectiveMessageType::kAbort) - 1;
  uint64_t aborts_sent = 0;
  uint64_t aborts_received = 0;
  for (const auto& op : run.ops) {
    aborts_sent += op->coverage_counts().sent[abort];
    aborts_received += op->coverage_counts().received[abort];
  }
  EXPECT_GE(aborts_received, 2u);
  EXPECT_GE(aborts_sent, aborts_received);
}

// Posts `bytes` as a message from rank `from` to rank `to`, beside the
// transfer operations (a misbehaving or stale peer).
void send_raw(DirectRun& run, RankId from, RankId to, std::span<const std::byte> bytes) {
  RankEnv env = run.simulator.env(from);
  Buffer slot = *env.memory.allocate(MemoryKind::kHostPinned, 0, bytes.size());
  MemoryRegion region = *env.nic.register_memory(slot, Access::kNone);
  ASSERT_TRUE(env.memory.write_bytes(slot, 0, bytes).is_ok());
  SendWorkRequest wr;
  wr.wr_id = 43;
  wr.opcode = WorkOpcode::kSend;
  wr.local = Sge{slot.addr, static_cast<uint32_t>(slot.length), region.lkey};
  ASSERT_TRUE(env.nic.post_send(env.nic.queue_pair_to(to), wr).is_ok());
}

std::array<std::byte, CollectiveMessage::kWireBytes> abort_bytes(uint32_t failed_rank, StatusCode reason) {
  CollectiveMessage m;
  m.type = CollectiveMessageType::kAbort;
  m.failed_rank = failed_rank;
  m.reason = reason;
  return m.encode();
}

TEST(BroadcastRun, AnAbortEndsAnUnfinishedPartAndIsIgnoredByAFinishedOne) {
  const Scenario s = broadcast_scenario(2, 0, 1 << 20, MemoryId::host(0), {MemoryId::host(1)}, {}, false);
  {
    DirectRun run(s);
    send_raw(run, 0, 1, abort_bytes(0, StatusCode::kOutOfMemory));
    run.simulator.run();
    EXPECT_EQ(run.ops[1]->status().code(), StatusCode::kAborted);
    EXPECT_NE(run.ops[1]->status().message().find("rank 0 failed (OUT_OF_MEMORY)"), std::string::npos)
        << run.ops[1]->status().message();
    EXPECT_FALSE(run.ops[1]->finished());
  }
  {
    DirectRun run(s);
    run.simulator.run();
    ASSERT_TRUE(run.ops[1]->finished());
    send_raw(run, 0, 1, abort_bytes(0, StatusCode::kQpError));
    run.simulator.run();
    EXPECT_TRUE(run.ops[1]->status().is_ok()) << run.ops[1]->status().to_string();
    EXPECT_TRUE(run.ops[1]->finished());
  }
}

TEST(BroadcastRun, AnAbortNamingNoOtherRankIsMalformed) {
  for (uint32_t named : {1u, 7u}) {  // the receiver itself; no such rank
    DirectRun run(broadcast_scenario(2, 0, 1 << 20, MemoryId::host(0), {MemoryId::host(1)}, {}, false));
    send_raw(run, 0, 1, abort_bytes(named, StatusCode::kQpError));
    run.simulator.run();
    EXPECT_EQ(run.ops[1]->status().code(), StatusCode::kMalformedMessage) << named;
    EXPECT_NE(run.ops[1]->status().message().find("ABORT from rank 0"), std::string::npos)
        << run.ops[1]->status().message();
  }
}

TEST(BroadcastRun, AMalformedMessageFromAPeerFailsTheBroadcastNamingThePeer) {
  DirectRun run(broadcast_scenario(2, 0, 1 << 20, MemoryId::host(0), {MemoryId::host(1)}, {}, false));
  // Rank 0 sends rank 1 a message no collective would: type 9.
  RankEnv env0 = run.simulator.env(0);
  Buffer junk = *env0.memory.allocate(MemoryKind::kHostPinned, 0, CollectiveMessage::kWireBytes);
  MemoryRegion region = *env0.nic.register_memory(junk, Access::kNone);
  std::vector<std::byte> bytes(CollectiveMessage::kWireBytes, std::byte{9});
  ASSERT_TRUE(env0.memory.write_bytes(junk, 0, bytes).is_ok());
  SendWorkRequest wr;
  wr.wr_id = 42;
  wr.opcode = WorkOpcode::kSend;
  wr.local = Sge{junk.addr, static_cast<uint32_t>(junk.length), region.lkey};
  ASSERT_TRUE(env0.nic.post_send(env0.nic.queue_pair_to(1), wr).is_ok());
  run.simulator.run();
  EXPECT_EQ(run.ops[1]->status().code(), StatusCode::kMalformedMessage);
  EXPECT_NE(run.ops[1]->status().message().find("from rank 0"), std::string::npos)
      << run.ops[1]->status().message();
}

TEST(BroadcastRun, AWriteWithImmediateThatIsNoChunkOfThePlanIsRefused) {
  for (uint32_t imm : {99999u, 0u}) {
    DirectRun run(broadcast_scenario(2, 0, 1 << 20, MemoryId::host(0), {MemoryId::host(1)}, {}, false));
    // A zero-byte write passes the NIC's rkey check; its immediate names no
    // copy (99999) or a real copy with no bytes (0).
    RankEnv env0 = run.simulator.env(0);
    SendWorkRequest wr;
    wr.wr_id = 7;
    wr.opcode = WorkOpcode::kRdmaWriteWithImm;
    wr.imm_data = imm;
    ASSERT_TRUE(env0.nic.post_send(env0.nic.queue_pair_to(1), wr).is_ok());
    run.simulator.run();
    EXPECT_EQ(run.ops[1]->status().code(), StatusCode::kMalformedMessage) << imm;
    EXPECT_NE(run.ops[1]->status().message().find("from rank 0"), std::string::npos)
        << run.ops[1]->status().message();
  }
}

TEST(BroadcastRun, AChainFinishesNoSoonerThanItsPipelinedBoundAndCloseToIt) {
  // gpu -> host IB -> network -> host IB -> gpu: four stages, one busiest link.
  Scenario s = broadcast_scenario(2, 1, 256 << 20, MemoryId::gpu_of(0, 0), {MemoryId::gpu_of(1, 0)},
                                  {}, false);
  s.cluster.gpu_direct = {{false}, {false}};
  NullTraceSink trace;
  RunReport r = run_broadcast_scenario(s, {}, trace);
  ASSERT_TRUE(r.passed()) << joined(r.problems);
  EXPECT_EQ(broadcast_of(r).graph.depth(), 3u);
  EXPECT_GE(broadcast_of(r).finish_ns, broadcast_of(r).bound.total_ns);
  EXPECT_LE(broadcast_of(r).finish_ns, broadcast_of(r).bound.total_ns * 5 / 4);
}

TEST(BroadcastRun, AnInstanceSmallerThanTheBroadcastIsRefusedAtStart) {
  Scenario s = broadcast_scenario(2, 0, 4096, MemoryId::host(0), {MemoryId::host(1)});
  ClusterTopology topology(s.cluster);
  TransferGraph g = *plan_broadcast(topology, MemoryId::host(0), {MemoryId::host(1)}, 4096, {});
  NullTraceSink trace;
  sim::Simulator simulator(s.cluster, {}, trace);
  TransferOperation op(simulator.env(1), g, topology, {});
  Buffer small = *simulator.env(1).memory.allocate(MemoryKind::kHostPinned, 0, 100);
  Status st = op.start({{g.destinations[0], small}});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("smaller than the broadcast"), std::string::npos);
}

// issue 18 #8: a broadcast run reports progress as its destinations complete,
// each once, ending at all of them.
TEST(BroadcastRun, ProgressCountsDestinationsAsTheyComplete) {
  Scenario s = broadcast_scenario(3, 2, 1 << 20, MemoryId::gpu_of(0, 0), every_memory(3, 2));
  NullTraceSink trace;
  std::vector<std::pair<size_t, size_t>> seen;
  const RunReport r = run_simulation(s, {}, trace, [&seen](size_t done, size_t total) {
    seen.emplace_back(done, total);
  });
  ASSERT_TRUE(r.passed()) << joined(r.problems);
  const size_t destinations = broadcast_of(r).destinations.size();
  ASSERT_EQ(seen.size(), destinations);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i], std::make_pair(i + 1, destinations));
  }
}

}  // namespace
}  // namespace tensorwire::collectives

namespace tensorwire::collectives {
namespace {

using testing::broadcast_scenario;
using testing::broadcast_of;
using testing::every_memory;
using testing::joined;
using testing::run_broadcast_scenario;

constexpr size_t kWindowReady = static_cast<size_t>(CollectiveMessageType::kWindowReady) - 1;

TEST(RegistrationWindows, EveryAlgorithmDeliversTheExactBytesThroughWindowedInstances) {
  const uint64_t bytes = (3 << 20) + 13;  // the last window is short
  for (uint32_t algorithm = 0; algorithm < kBroadcastAlgorithms; ++algorithm) {
    BroadcastOptions o;
    o.algorithm = static_cast<BroadcastAlgorithm>(algorithm);
    o.ib_buffer_max_bytes = 256 << 10;
    o.max_chunk_bytes = 96 << 10;            // chunks do not divide the windows:
    o.registration_window_bytes = 320 << 10; // they are cut at each window's end
    Scenario s = broadcast_scenario(3, 2, bytes, MemoryId::gpu_of(0, 0), every_memory(3, 2), o);
    NullTraceSink trace;
    RunReport r = run_broadcast_scenario(s, {}, trace);
    EXPECT_TRUE(r.passed()) << "algorithm " << algorithm << "\n" << joined(r.problems);
    EXPECT_EQ(broadcast_of(r).destinations.size(), 9u);
    EXPECT_GT(r.coverage.count_of(kCoverageMessagesReceived, "WINDOW_READY"), 0u) << algorithm;
  }
}

// Host 0 -> host 1: host 1's instance is written by the network and feeds
// nothing over it, so it is registered in windows: the first one's rkey in
// IB_READY, every later one announced once, in order, and used.
TEST(RegistrationWindows, EachLaterWindowIsAnnouncedOnceAndTheLastIsShort) {
  BroadcastOptions o;
  o.registration_window_bytes = 300 << 10;
  DirectRun run(broadcast_scenario(2, 0, 1 << 20, MemoryId::host(0), {MemoryId::host(1)}, o, false));
  run.simulator.run();
  ASSERT_TRUE(run.ops[0]->finished()) << run.ops[0]->status().to_string();
  ASSERT_TRUE(run.ops[1]->finished()) << run.ops[1]->status().to_string();
  // 1 MiB in windows of 300 KiB: 4 windows (the last 124 KiB), 3 announced.
  EXPECT_EQ(run.ops[1]->coverage_counts().sent[kWindowReady], 3u);
  EXPECT_EQ(run.ops[0]->coverage_counts().received[kWindowReady], 3u);
  EXPECT_TRUE(run.invariants.ok()) << run.invariants.violations().front();
}

TEST(RegistrationWindows, WithoutWindowsNoWindowIsAnnounced) {
  DirectRun run(broadcast_scenario(2, 0, 1 << 20, MemoryId::host(0), {MemoryId::host(1)}, {}, false));
  run.simulator.run();
  ASSERT_TRUE(run.ops[1]->finished()) << run.ops[1]->status().to_string();
  EXPECT_EQ(run.ops[1]->coverage_counts().sent[kWindowReady], 0u);
}

TEST(RegistrationWindows, AWindowOutOfOrderIsMalformedAndNamesTheExpectedOffset) {
  BroadcastOptions o;
  o.registration_window_bytes = 256 << 10;
  DirectRun run(broadcast_scenario(2, 0, 4 << 20, MemoryId::host(0), {MemoryId::host(1)}, o, false));
  uint32_t copy = 0;
  for (const TransferCopy& c : run.graph.copies) {
    if (c.hop.network) copy = c.id;
  }
  CollectiveMessage m;
  m.type = CollectiveMessageType::kWindowReady;
  m.copy = copy;
  m.window_offset = 3 << 20;  // window 1 (at 256 KiB) was announced at the start
  m.window_bytes = 256 << 10;
  m.rkey = 1;
  send_raw(run, 1, 0, m.encode());
  run.simulator.run();
  EXPECT_EQ(run.ops[0]->status().code(), StatusCode::kMalformedMessage);
  EXPECT_NE(run.ops[0]->status().message().find("expected the next window at 524288"), std::string::npos)
      << run.ops[0]->status().message();
  EXPECT_NE(run.ops[0]->status().message().find("from rank 1"), std::string::npos)
      << run.ops[0]->status().message();
}

}  // namespace
}  // namespace tensorwire::collectives
