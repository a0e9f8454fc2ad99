// Simulator and protocol throughput, measured with Google Benchmark.
//   build/bench/tensorwire_bench --benchmark_filter=...
// Results and the commands that produced them are in docs/PERFORMANCE.md.
#include <benchmark/benchmark.h>

#include <string>

#include "backend_sim/event_queue.h"
#include "backend_sim/simulator.h"
#include "core/trace_sink.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire {
namespace {

const std::string kRoot = TENSORWIRE_SOURCE_ROOT;

// The event loop alone: two ranks bounce a 0-byte RDMA write back and forth;
// every completion posts the next write. No protocol, timing-only.
void BM_SimulatorEventLoop(benchmark::State& state) {
  const int64_t writes = state.range(0);
  uint64_t events = 0;
  for (auto _ : state) {
    Cluster cluster;
    cluster.nodes = 2;
    sim::SimOptions options;
    options.payload = false;
    NullTraceSink trace;
    sim::Simulator simulator(cluster, options, trace);
    RankEnv a = simulator.env(0);
    RankEnv b = simulator.env(1);
    Buffer buf_a = *a.memory.allocate(MemoryKind::kHostPinned, 0, 64);
    Buffer buf_b = *b.memory.allocate(MemoryKind::kHostPinned, 0, 64);
    MemoryRegion mr_a = *a.nic.register_memory(buf_a, Access::kLocalWrite | Access::kRemoteWrite);
    MemoryRegion mr_b = *b.nic.register_memory(buf_b, Access::kLocalWrite | Access::kRemoteWrite);
    int64_t left = writes;
    auto post = [&](RankEnv& from, const MemoryRegion& local, const MemoryRegion& remote,
                    RankId peer) {
      SendWorkRequest wr;
      wr.wr_id = static_cast<uint64_t>(left);
      wr.opcode = WorkOpcode::kRdmaWrite;
      wr.local = {local.addr, 8, local.lkey};
      wr.remote_addr = remote.addr;
      wr.rkey = remote.rkey;
      Status st = from.nic.post_send(from.nic.queue_pair_to(peer), wr);
      if (!st.is_ok()) state.SkipWithError(st.to_string().c_str());
    };
    a.nic.set_completion_handler([&](const Completion&) {
      if (--left > 0) post(b, mr_b, mr_a, 0);
    });
    b.nic.set_completion_handler([&](const Completion&) {
      if (--left > 0) post(a, mr_a, mr_b, 1);
    });
    post(a, mr_a, mr_b, 1);
    simulator.run();
    events += simulator.events_processed();
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimulatorEventLoop)->Arg(200000)->Unit(benchmark::kMillisecond);

// The event queue alone, no NIC: 64 chains of events, each event scheduling
// its chain's next one a few nanoseconds on (so the heap holds 64 entries and
// most pops reorder it), as the simulator's components do. What
// BM_SimulatorEventLoop adds on top of this is the NIC model's work per event.
void BM_EventQueueAlone(benchmark::State& state) {
  const int64_t events_per_run = state.range(0);
  uint64_t events = 0;
  for (auto _ : state) {
    sim::EventQueue queue;
    int64_t left = events_per_run;
    struct Chain {
      sim::EventQueue* queue;
      int64_t* left;
      uint32_t id;
      void operator()() const {
        if (--*left <= 0) return;
        queue->schedule_after(1 + (id * 7 + static_cast<uint32_t>(*left)) % 13, id, "chain", *this);
      }
    };
    for (uint32_t c = 0; c < 64; ++c) queue.schedule_after(c, c, "chain", Chain{&queue, &left, c});
    while (queue.run_next()) {
    }
    events += queue.processed();
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EventQueueAlone)->Arg(1000000)->Unit(benchmark::kMillisecond);

Scenario load(const std::string& relative) {
  return load_scenario_file(kRoot + "/" + relative);
}

// The whole stack on the simulator, timing-only: events per second and wall
// time per training step of VGG16 on 8 nodes x 4 GPUs.
void BM_Vgg16TrainingStepTimingOnly(benchmark::State& state) {
  Scenario scenario = load("scenarios/vgg16_8x4.toml");
  SimulationOptions options;
  options.timing_only = true;
  uint64_t events = 0;
  uint64_t steps = 0;
  for (auto _ : state) {
    NullTraceSink trace;
    RunReport report = run_simulation(scenario, options, trace);
    if (!report.passed()) state.SkipWithError(report.problems.front().text.c_str());
    events += report.events_processed;
    steps += report.workload.steps.size();
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["steps"] = static_cast<double>(steps) / static_cast<double>(state.iterations());
  // Seconds of wall time per simulated step (printed with SI prefixes: 12m = 12 ms).
  state.counters["s_per_step"] = benchmark::Counter(
      static_cast<double>(steps), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Vgg16TrainingStepTimingOnly)->Unit(benchmark::kMillisecond);

// Protocol overhead per tensor in steady state: many small tensors between two
// ranks, payload mode, wall time per transferred tensor.
void BM_PerTensorProtocolOverhead(benchmark::State& state) {
  Scenario scenario = load("scenarios/quickstart.toml");
  scenario.workload.steps.clear();
  const int64_t tensors = state.range(0);
  WorkloadStep step;
  WorkloadPhase phase;
  phase.label = "tensors";
  for (int64_t i = 0; i < tensors; ++i) {
    TensorTransfer t;
    t.name = "t" + std::to_string(i);
    t.src = 0;
    t.dst = 1;
    t.dtype = DataType::kFloat32;
    t.shape.dims = {16};
    phase.transfers.push_back(t);
  }
  step.phases.push_back(phase);
  for (uint64_t s = 1; s <= 10; ++s) {
    step.step_id = s;
    scenario.workload.steps.push_back(step);
  }
  uint64_t transferred = 0;
  for (auto _ : state) {
    NullTraceSink trace;
    RunReport report = run_simulation(scenario, {}, trace);
    if (!report.passed()) state.SkipWithError(report.problems.front().text.c_str());
    transferred += static_cast<uint64_t>(tensors) * 10;
  }
  state.counters["tensors_per_s"] =
      benchmark::Counter(static_cast<double>(transferred), benchmark::Counter::kIsRate);
  state.counters["s_per_tensor"] =
      benchmark::Counter(static_cast<double>(transferred),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PerTensorProtocolOverhead)->Arg(256)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tensorwire

BENCHMARK_MAIN();
