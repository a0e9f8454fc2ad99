// Property: on any cluster (1..16 nodes, 0..8 GPUs each, GPUDirect mixed at
// random, NVLink or not), any size (0 B .. 256 MiB, most not a multiple of
// 4 KiB), any algorithm and radix, any ring and chunk sizes, a broadcast in
// payload mode ends with every destination holding exactly the source bytes,
// every IB buffer freed once after its last consumer, no ring byte overwritten
// before every consumer read it and IB memory never above its pool.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>

#include "tests/protocols/realm_broadcast/broadcast_fixture.h"

namespace tensorwire::collectives {
namespace {

// Payload mode holds every instance: keep one case's instances within this.
constexpr uint64_t kMaxCaseBytes = 768ull << 20;

uint64_t draw_size() {
  switch (*rc::gen::inRange(0, 20)) {
    case 0: return 0;
    case 1: return *rc::gen::inRange<uint64_t>(1, 64);
    case 2: return *rc::gen::inRange<uint64_t>(64 << 20, (256 << 20) + 1);  // large, rare
    case 3: case 4: case 5: return *rc::gen::inRange<uint64_t>(1 << 20, 16 << 20);
    default: return *rc::gen::inRange<uint64_t>(64, 1 << 20);
  }
}

RC_GTEST_PROP(BroadcastProperty,
              EveryDestinationGetsExactlyTheSourceBytesAndEveryInvariantHolds, ()) {
  const uint32_t nodes = *rc::gen::inRange<uint32_t>(1, 17);
  const uint32_t gpus = *rc::gen::inRange<uint32_t>(0, 9);
  const uint64_t bytes = draw_size();
  std::vector<MemoryId> all = testing::every_memory(nodes, gpus);
  const MemoryId source = *rc::gen::elementOf(all);
  // A random subset, some memories twice (two instances side by side).
  std::vector<MemoryId> dests;
  const size_t want = *rc::gen::inRange<size_t>(1, all.size() + 3);
  const size_t cap = bytes == 0 ? want : std::max<uint64_t>(1, kMaxCaseBytes / 2 / bytes);
  for (size_t i = 0; i < std::min(want, cap); ++i) dests.push_back(*rc::gen::elementOf(all));

  BroadcastOptions o;
  o.algorithm = static_cast<BroadcastAlgorithm>(*rc::gen::inRange(0, static_cast<int>(kBroadcastAlgorithms)));
  o.radix_inter = *rc::gen::inRange<uint32_t>(1, 5);
  o.radix_intra = *rc::gen::inRange<uint32_t>(0, 4);
  o.min_chunk_bytes = *rc::gen::element<uint64_t>(512, 4096, 5000);
  o.max_chunk_bytes = o.min_chunk_bytes * *rc::gen::element<uint64_t>(1, 4, 64, 256);
  o.ib_buffer_max_bytes = o.min_chunk_bytes * *rc::gen::element<uint64_t>(1, 3, 16, 4096);
  o.max_inflight_chunks = *rc::gen::inRange<uint32_t>(1, 6);

  Scenario s = testing::broadcast_scenario(nodes, gpus, bytes, source, dests, o);
  s.seed = *rc::gen::inRange<uint64_t>(0, 1000);
  s.cluster.gpu_direct.assign(nodes, std::vector<bool>(gpus, true));
  for (auto& node : s.cluster.gpu_direct) {
    for (size_t g = 0; g < node.size(); ++g) node[g] = *rc::gen::arbitrary<bool>();
  }
  if (*rc::gen::arbitrary<bool>()) s.cluster.nvlink_bandwidth_bytes_per_s = 50e9;
  RC_TAG(o.algorithm);

  NullTraceSink trace;
  RunReport r = testing::run_broadcast_scenario(s, {}, trace);
  RC_ASSERT(r.passed());
  for (const auto& d : testing::broadcast_of(r).destinations) RC_ASSERT(d.done_ns >= 0);
  for (const auto& [memory, ib_bytes] : testing::broadcast_of(r).graph.ib_bytes_by_memory()) {
    RC_ASSERT(ib_bytes <= o.ib_pool_bytes);
  }
}

}  // namespace
}  // namespace tensorwire::collectives
