// The broadcast planners build the transfer graphs Realm's algorithms describe.
#include "core/protocols/realm_broadcast/broadcast_planner.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tensorwire::collectives {
namespace {

Cluster spec(uint32_t nodes, uint32_t gpus, bool gpu_direct = true) {
  Cluster s;
  s.nodes = nodes;
  s.gpus_per_node = gpus;
  if (!gpu_direct) s.gpu_direct.assign(nodes, std::vector<bool>(gpus, false));
  return s;
}

BroadcastOptions with(BroadcastAlgorithm a, uint32_t inter = 2, uint32_t intra = 2) {
  BroadcastOptions o;
  o.algorithm = a;
  o.radix_inter = inter;
  o.radix_intra = intra;
  return o;
}

TransferGraph plan(const ClusterTopology& t, MemoryId src, std::vector<MemoryId> dests,
                   uint64_t bytes, const BroadcastOptions& o) {
  auto g = plan_broadcast(t, src, dests, bytes, o);
  EXPECT_TRUE(g) << g.status().to_string();
  EXPECT_EQ(g->validate(), "");
  return *g;
}

// The buffer of destination i (in the order given).
const TransferBuffer& dest(const TransferGraph& g, size_t i) { return g.buffers[g.destinations[i]]; }

TEST(BroadcastPlanner, NaiveGivesEveryPathItsOwnIbBuffersAndAggregationMergesThem) {
  ClusterTopology t(spec(3, 1, /*gpu_direct=*/false));
  const std::vector<MemoryId> dests{MemoryId::gpu_of(1, 0), MemoryId::gpu_of(2, 0)};
  // gpu -> host IB -> (network) -> host IB -> gpu, for each destination.
  TransferGraph naive = plan(t, MemoryId::gpu_of(0, 0), dests, 1 << 20, with(BroadcastAlgorithm::kNaive));
  EXPECT_EQ(naive.ib_buffer_count(), 4u);
  EXPECT_EQ(naive.buffers[naive.source].consumers.size(), 2u);
  // Aggregation shares the source node's host IB buffer: one copy out of the GPU.
  TransferGraph agg = plan(t, MemoryId::gpu_of(0, 0), dests, 1 << 20, with(BroadcastAlgorithm::kAggregation));
  EXPECT_EQ(agg.ib_buffer_count(), 3u);
  ASSERT_EQ(agg.buffers[agg.source].consumers.size(), 1u);
  const TransferBuffer& shared = agg.buffers[agg.copies[agg.buffers[agg.source].consumers[0]].to];
  EXPECT_EQ(shared.role, BufferRole::kIB);
  EXPECT_EQ(shared.memory, MemoryId::host(0));
  EXPECT_EQ(shared.consumers.size(), 2u);
  EXPECT_EQ(agg.depth(), 3u);
}

TEST(BroadcastPlanner, RadixTreeAcrossNodesHasLogDepth) {
  ClusterTopology t(spec(8, 1));
  std::vector<MemoryId> dests;
  for (uint32_t n = 0; n < 8; ++n) dests.push_back(MemoryId::gpu_of(n, 0));
  TransferGraph g = plan(t, MemoryId::gpu_of(0, 0), dests, 1 << 20, with(BroadcastAlgorithm::kRadixTree));
  // GPUDirect: no IB buffers; node7's entry is source -> 1 -> 3 -> 7.
  EXPECT_EQ(g.ib_buffer_count(), 0u);
  EXPECT_EQ(g.depth_of(g.destinations[7]), 3u);
  EXPECT_EQ(g.depth_of(g.destinations[1]), 1u);
  // A radix-2 tree: nobody feeds more than two other nodes.
  for (const TransferBuffer& b : g.buffers) {
    const auto network = std::count_if(b.consumers.begin(), b.consumers.end(),
                                       [&](uint32_t c) { return g.copies[c].hop.network; });
    EXPECT_LE(network, 2) << b.name();
  }
  // Entry buffers are destinations that feed others; never IB buffers.
  EXPECT_TRUE(dest(g, 1).serves_as_ib());
  EXPECT_FALSE(dest(g, 7).serves_as_ib());
  // Radix 4: node7 is a grandchild, node1..4 children of the source.
  TransferGraph g4 = plan(t, MemoryId::gpu_of(0, 0), dests, 1 << 20, with(BroadcastAlgorithm::kRadixTree, 4));
  EXPECT_EQ(g4.depth_of(g4.destinations[4]), 1u);
  EXPECT_EQ(g4.depth_of(g4.destinations[7]), 2u);
}

TEST(BroadcastPlanner, InterRadixOneIsOneToNAggregationAcrossNodes) {
  ClusterTopology t(spec(6, 1));
  std::vector<MemoryId> dests;
  for (uint32_t n = 1; n < 6; ++n) dests.push_back(MemoryId::gpu_of(n, 0));
  TransferGraph g = plan(t, MemoryId::host(0), dests, 1 << 20, with(BroadcastAlgorithm::kRadixTree, 1));
  for (uint32_t d : g.destinations) EXPECT_EQ(g.depth_of(d), 1u);
  EXPECT_EQ(g.buffers[g.source].consumers.size(), 5u);
}

TEST(BroadcastPlanner, EntryBufferIsADestinationTheNicCanReach) {
  Cluster s = spec(2, 2);
  s.gpu_direct = {{true, true}, {false, true}};
  ClusterTopology t(s);
  TransferGraph g = plan(t, MemoryId::gpu_of(0, 0), {MemoryId::gpu_of(1, 0), MemoryId::gpu_of(1, 1)},
                         1 << 20, with(BroadcastAlgorithm::kRadixTree));
  // node1/gpu1 has GPUDirect, so it is the entry and takes the network write.
  EXPECT_EQ(g.depth_of(g.destinations[1]), 1u);
  EXPECT_TRUE(dest(g, 1).serves_as_ib());
  EXPECT_GT(g.depth_of(g.destinations[0]), 1u);
}

TEST(BroadcastPlanner, IntraNodeRadixChoosesAggregationSplitOrTree) {
  ClusterTopology t(spec(2, 4));
  std::vector<MemoryId> dests{MemoryId::host(1)};
  for (uint32_t gpu = 0; gpu < 4; ++gpu) dests.push_back(MemoryId::gpu_of(1, gpu));
  // The entry is node1/host (the first destination the NIC reaches).
  auto max_depth = [](const TransferGraph& g) { return g.depth(); };
  TransferGraph agg = plan(t, MemoryId::host(0), dests, 1 << 20, with(BroadcastAlgorithm::kRadixTree, 2, 0));
  EXPECT_EQ(max_depth(agg), 2u);  // host(0) -> host(1) -> every GPU
  EXPECT_EQ(dest(agg, 0).consumers.size(), 4u);
  TransferGraph split = plan(t, MemoryId::host(0), dests, 1 << 20, with(BroadcastAlgorithm::kRadixTree, 2, 1));
  // Split: the GPU group's head (gpu0) is fed by the entry; the other GPUs
  // from the head by aggregation, through one shared host IB buffer.
  EXPECT_EQ(dest(split, 0).consumers.size(), 1u);
  EXPECT_EQ(split.depth_of(split.destinations[1]), 2u);
  EXPECT_EQ(split.depth_of(split.destinations[4]), 4u);
  EXPECT_EQ(split.ib_buffer_count(), 1u);
  TransferGraph tree = plan(t, MemoryId::host(0), dests, 1 << 20, with(BroadcastAlgorithm::kRadixTree, 2, 2));
  // Radix-2 tree over [entry, gpu0, gpu1, gpu2, gpu3]: gpu0 and gpu1 are the
  // entry's children, gpu2 and gpu3 gpu0's (through one host IB buffer).
  EXPECT_EQ(dest(tree, 0).consumers.size(), 2u);
  EXPECT_EQ(tree.depth_of(tree.destinations[2]), 2u);  // gpu1: host(1) -> gpu1
  EXPECT_EQ(tree.depth_of(tree.destinations[4]), 4u);  // gpu3: gpu0 -> IB -> gpu3
  EXPECT_EQ(tree.ib_buffer_count(), 1u);
}

TEST(BroadcastPlanner, AggregationFeedsADestinationOnAnotherDestinationsPathOnce) {
  // Without GPUDirect node1's GPU is reached through node1's host memory, where
  // a destination already is: that destination becomes the common predecessor,
  // whatever order the destinations were given in.
  ClusterTopology t(spec(2, 1, /*gpu_direct=*/false));
  for (bool gpu_first : {false, true}) {
    std::vector<MemoryId> dests{MemoryId::host(1), MemoryId::gpu_of(1, 0)};
    if (gpu_first) std::swap(dests[0], dests[1]);
    TransferGraph g = plan(t, MemoryId::gpu_of(0, 0), dests, 1 << 20, with(BroadcastAlgorithm::kAggregation));
    size_t network = 0;
    for (const TransferCopy& c : g.copies) network += c.hop.network ? 1 : 0;
    EXPECT_EQ(network, 1u) << "the message crosses the network once";
    const TransferBuffer& host_dest = dest(g, gpu_first ? 1 : 0);
    EXPECT_TRUE(host_dest.serves_as_ib());
    EXPECT_EQ(g.ib_buffer_count(), 1u);  // node0/host only
  }
}

TEST(BroadcastPlanner, DestinationsSharingTheSourceMemoryAreCopiedInPlace) {
  ClusterTopology t(spec(1, 1));
  TransferGraph g = plan(t, MemoryId::gpu_of(0, 0), {MemoryId::gpu_of(0, 0), MemoryId::gpu_of(0, 0)},
                         4096, with(BroadcastAlgorithm::kNaive));
  EXPECT_EQ(g.copies.size(), 2u);
  for (const TransferCopy& c : g.copies) EXPECT_EQ(c.hop.from, c.hop.to);
}

TEST(BroadcastPlanner, IbBuffersShrinkToFitThePoolInWholeMinChunks) {
  ClusterTopology t(spec(5, 1, /*gpu_direct=*/false));
  std::vector<MemoryId> dests;
  for (uint32_t n = 1; n < 5; ++n) dests.push_back(MemoryId::gpu_of(n, 0));
  BroadcastOptions o = with(BroadcastAlgorithm::kNaive);
  o.ib_pool_bytes = 100 * 1024;  // four IB buffers on node0/host share it
  TransferGraph g = plan(t, MemoryId::gpu_of(0, 0), dests, 1 << 20, o);
  for (const auto& [memory, bytes] : g.ib_bytes_by_memory()) {
    EXPECT_LE(bytes, o.ib_pool_bytes) << memory.name();
  }
  for (const TransferBuffer& b : g.buffers) {
    if (b.role == BufferRole::kIB && b.memory == MemoryId::host(0)) {
      EXPECT_EQ(b.ring_bytes, 24u * 1024);  // 100 KiB / 4, down to whole 4 KiB
    }
  }
  o.ib_pool_bytes = 8192;  // four buffers of at least 4 KiB cannot fit
  auto too_small = plan_broadcast(t, MemoryId::gpu_of(0, 0), dests, 1 << 20, o);
  ASSERT_FALSE(too_small);
  EXPECT_EQ(too_small.status().code(), StatusCode::kOutOfMemory);
  EXPECT_NE(too_small.status().message().find("node0/host"), std::string::npos);
}

TEST(BroadcastPlanner, RingsNeverExceedTheMessageOrTheIbBufferCap) {
  ClusterTopology t(spec(2, 1, false));
  BroadcastOptions o;
  TransferGraph small = plan(t, MemoryId::gpu_of(0, 0), {MemoryId::gpu_of(1, 0)}, 5000, o);
  TransferGraph large = plan(t, MemoryId::gpu_of(0, 0), {MemoryId::gpu_of(1, 0)}, 1ull << 30, o);
  for (const TransferBuffer& b : small.buffers) {
    if (b.role == BufferRole::kIB) {
      EXPECT_EQ(b.ring_bytes, 5000u);
    }
  }
  for (const TransferBuffer& b : large.buffers) {
    if (b.role == BufferRole::kIB) {
      EXPECT_EQ(b.ring_bytes, 16u << 20);
    }
  }
}

TEST(BroadcastPlanner, BadOptionsAndUnknownMemoriesAreErrors) {
  ClusterTopology t(spec(2, 1));
  BroadcastOptions o;
  o.max_chunk_bytes = 1024;  // below min_chunk
  EXPECT_FALSE(plan_broadcast(t, MemoryId::host(0), {MemoryId::host(1)}, 10, o));
  o = BroadcastOptions{};
  o.radix_inter = 0;
  EXPECT_FALSE(plan_broadcast(t, MemoryId::host(0), {MemoryId::host(1)}, 10, o));
  EXPECT_FALSE(plan_broadcast(t, MemoryId::host(0), {MemoryId::host(5)}, 10, BroadcastOptions{}));
  EXPECT_FALSE(plan_broadcast(t, MemoryId::gpu_of(0, 3), {MemoryId::host(1)}, 10, BroadcastOptions{}));
}

TEST(TransferGraph, ValidateFindsAMissingProducerAndACycle) {
  ClusterTopology t(spec(2, 1));
  TransferGraph g = plan(t, MemoryId::host(0), {MemoryId::host(1)}, 10, BroadcastOptions{});
  TransferGraph no_producer = g;
  no_producer.buffers[1].producer.reset();
  EXPECT_NE(no_producer.validate(), "");
  TransferGraph cycle = g;
  // The destination feeds itself.
  cycle.copies[0].from = 1;
  cycle.copies[0].hop.from = cycle.buffers[1].memory;
  cycle.buffers[1].consumers.push_back(0);
  cycle.buffers[0].consumers.clear();
  EXPECT_NE(cycle.validate(), "");
}

}  // namespace
}  // namespace tensorwire::collectives
