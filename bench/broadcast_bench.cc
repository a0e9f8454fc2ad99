// Benchmarks of the collective broadcast: planning a broadcast to 1024 GPUs on
// 256 nodes (target: under 50 ms), and simulating the 1 GiB broadcast to 32
// GPUs of scenarios/broadcast_8x4.toml (wall time of the simulation; the
// simulated times are printed by `tensorwire run`).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "core/protocols/realm_broadcast/broadcast_planner.h"
#include "core/protocols/realm_broadcast/broadcast_account.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire {
namespace {

using collectives::MemoryId;

void BM_PlanBroadcast1024GpusOn256Nodes(benchmark::State& state) {
  Cluster spec;
  spec.nodes = 256;
  spec.gpus_per_node = 4;
  // Mixed GPUDirect, so paths stage through host IB buffers on half the GPUs.
  spec.gpu_direct.assign(256, {true, false, true, false});
  std::vector<MemoryId> dests;
  for (uint32_t n = 0; n < 256; ++n) {
    for (uint32_t g = 0; g < 4; ++g) dests.push_back(MemoryId::gpu_of(n, g));
  }
  collectives::BroadcastOptions options;
  options.algorithm = static_cast<collectives::BroadcastAlgorithm>(state.range(0));
  size_t copies = 0;
  for (auto _ : state) {
    // A fresh topology each time: its shortest-path cache is part of planning.
    collectives::ClusterTopology topology(spec);
    auto graph = collectives::plan_broadcast(topology, MemoryId::gpu_of(0, 0), dests, 1ull << 30,
                                             options);
    if (!graph) state.SkipWithError(graph.status().message().c_str());
    copies = graph->copies.size();
    benchmark::DoNotOptimize(copies);
  }
  state.counters["copies"] = static_cast<double>(copies);
}
BENCHMARK(BM_PlanBroadcast1024GpusOn256Nodes)
    ->ArgName("algorithm")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_SimulateBroadcast8x4(benchmark::State& state) {
  Scenario scenario =
      load_scenario_file(std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/broadcast_8x4.toml");
  SimulationOptions options;
  options.timing_only = true;
  TimeNs simulated = 0;
  for (auto _ : state) {
    NullTraceSink trace;
    RunReport r = run_simulation(scenario, options, trace);
    if (!r.passed()) state.SkipWithError(r.problems.front().text.c_str());
    simulated = collectives::broadcast_result_of(r.collective.get())->finish_ns;
  }
  state.counters["simulated_ms"] = static_cast<double>(simulated) / 1e6;
}
BENCHMARK(BM_SimulateBroadcast8x4)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tensorwire
