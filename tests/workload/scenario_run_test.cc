// Whole-stack runs: shipped scenarios on the simulator, with every delivered
// tensor checked, and byte-for-byte determinism of a seed.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/trace_sink.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_protocol.h"

namespace tensorwire {
namespace {

const std::string kRoot = TENSORWIRE_SOURCE_ROOT;

// Folds every trace event into one FNV-1a hash: two runs with equal hashes
// produced the same trace, event for event.
class HashingTraceSink final : public TraceSink {
 public:
  void slice(std::string_view track, std::string_view name, TimeNs start_ns, TimeNs duration_ns,
             std::string_view detail) override {
    mix(track);
    mix(name);
    mix(std::to_string(start_ns));
    mix(std::to_string(duration_ns));
    mix(detail);
    ++events;
  }
  void instant(std::string_view track, std::string_view name, TimeNs at_ns,
               std::string_view detail) override {
    mix(track);
    mix(name);
    mix(std::to_string(at_ns));
    mix(detail);
    ++events;
  }
  uint64_t hash = 0xcbf29ce484222325ull;
  uint64_t events = 0;

 private:
  void mix(std::string_view s) {
    for (char c : s) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 0x100000001b3ull;
    }
    hash ^= 0xff;
    hash *= 0x100000001b3ull;
  }
};

std::string joined(const std::vector<Problem>& problems) { return problem_lines(problems); }

struct ShippedScenario {
  const char* file;
  bool payload;
};

class ShippedScenarioTest : public ::testing::TestWithParam<ShippedScenario> {};

TEST_P(ShippedScenarioTest, RunsToTheEndWithEveryTensorDelivered) {
  Scenario scenario = load_scenario_file(kRoot + "/scenarios/" + GetParam().file);
  SimulationOptions options;
  options.timing_only = !GetParam().payload;
  NullTraceSink trace;
  RunReport report = run_simulation(scenario, options, trace);
  EXPECT_TRUE(report.passed()) << joined(report.problems);
  EXPECT_TRUE(report.workload.finished);
  ASSERT_FALSE(report.workload.steps.empty());
  size_t transfers = 0;
  for (const auto& step : report.workload.steps) {
    EXPECT_GT(step.end_ns, step.start_ns) << "step " << step.step_id;
    for (const auto& t : step.transfers) {
      ++transfers;
      EXPECT_TRUE(t.status.is_ok()) << t.name << ": " << t.status.to_string();
      if (report.payload) {
        EXPECT_TRUE(t.verified) << t.name << " " << t.mismatch;
      }
    }
  }
  EXPECT_GT(transfers, 0u);

  // Per-step wire bytes: one entry per step, and together they are the run's total.
  ASSERT_EQ(report.step_wire_bytes.size(), report.workload.steps.size());
  uint64_t wire_sum = 0;
  for (size_t i = 0; i < report.step_wire_bytes.size(); ++i) {
    wire_sum += report.step_wire_bytes[i];
    if (!report.workload.steps[i].transfers.empty()) {
      EXPECT_GT(report.step_wire_bytes[i], 0u) << "step " << report.workload.steps[i].step_id;
    }
  }
  EXPECT_EQ(wire_sum, report.total_stats.bytes_on_wire_tx);
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios, ShippedScenarioTest,
    ::testing::Values(ShippedScenario{"quickstart.toml", true},
                      ShippedScenario{"meta_data_change.toml", true},
                      ShippedScenario{"string_tensors.toml", true},
                      ShippedScenario{"gpu_no_direct.toml", true},
                      ShippedScenario{"vgg16_8x4.toml", false},
                      ShippedScenario{"all_to_all_leaf_spine.toml", false},
                      ShippedScenario{"vgg16_rail.toml", false}),
    [](const auto& info) {
      std::string name = info.param.file;
      return name.substr(0, name.find('.'));
    });

TEST(Determinism, SameSeedGivesTheSameTraceHash) {
  Scenario scenario = load_scenario_file(kRoot + "/scenarios/meta_data_change.toml");
  HashingTraceSink first;
  HashingTraceSink second;
  RunReport a = run_simulation(scenario, {}, first);
  RunReport b = run_simulation(scenario, {}, second);
  ASSERT_TRUE(a.passed()) << joined(a.problems);
  EXPECT_GT(first.events, 0u);
  EXPECT_EQ(first.events, second.events);
  EXPECT_EQ(first.hash, second.hash);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.events_processed, b.events_processed);
}

TEST(Determinism, TheSeedReachesTheContent) {
  // Different seeds draw different bytes; the run still verifies.
  Scenario scenario = load_scenario_file(kRoot + "/scenarios/quickstart.toml");
  SimulationOptions options;
  options.has_seed = true;
  options.seed = 12345;
  NullTraceSink trace;
  RunReport report = run_simulation(scenario, options, trace);
  EXPECT_TRUE(report.passed()) << joined(report.problems);
  EXPECT_EQ(report.seed, 12345u);
}

TEST(TimingOnly, MovesNoPayloadButTakesTheSameSimulatedTime) {
  Scenario scenario = load_scenario_file(kRoot + "/scenarios/quickstart.toml");
  NullTraceSink trace;
  RunReport payload = run_simulation(scenario, {}, trace);
  SimulationOptions timing;
  timing.timing_only = true;
  RunReport timed = run_simulation(scenario, timing, trace);
  ASSERT_TRUE(payload.passed()) << joined(payload.problems);
  ASSERT_TRUE(timed.passed()) << joined(timed.problems);
  EXPECT_FALSE(timed.payload);
  EXPECT_EQ(payload.end_ns, timed.end_ns);
  for (const auto& step : timed.workload.steps) {
    for (const auto& t : step.transfers) EXPECT_FALSE(t.verified);
  }
}

TEST(TimingOnly, TheLargestControlRingStillCarriesMessages) {
  // The ring of one channel is one registered allocation; timing-only mode
  // must still give it bytes at the largest ring size the loader accepts.
  Scenario scenario = load_scenario_file(kRoot + "/scenarios/quickstart.toml");
  tf_verbs::options_of(scenario.protocol.options).control_ring_size = 4096;
  SimulationOptions timing;
  timing.timing_only = true;
  NullTraceSink trace;
  RunReport report = run_simulation(scenario, timing, trace);
  EXPECT_TRUE(report.passed()) << joined(report.problems);
  EXPECT_TRUE(report.workload.finished);
}

// A 9 GiB tensor whose Send fails at once in payload mode (no memory for its
// source), and a small one that always goes through, both rank 0 -> 1.
struct FailingAndSmall {
  TensorTransfer too_big;
  TensorTransfer small;
};
FailingAndSmall failing_and_small() {
  FailingAndSmall t;
  t.too_big.name = "too_big";
  t.too_big.src = 0;
  t.too_big.dst = 1;
  t.too_big.dtype = DataType::kFloat32;
  t.too_big.shape = TensorShape{{9, 256, 1024, 1024}};  // 9 GiB
  t.small = t.too_big;
  t.small.name = "small";
  t.small.shape = TensorShape{{1024}};
  return t;
}

TEST(WorkloadDriver, AFailedSendEndsItsPhaseWithoutTouchingTheNextOne) {
  // Step 1's only Send fails at once (its 9 GiB source does not fit payload
  // mode), which ends step 1 before its Recv's timer fires. That late timer
  // must not post a Recv for step 2's transfer of the same index.
  Scenario scenario = load_scenario_file(kRoot + "/scenarios/quickstart.toml");
  auto [big, small] = failing_and_small();
  big.recv_offset_ns = 50'000;
  scenario.workload.kind = "tensors";
  scenario.workload.steps = {WorkloadStep{1, {WorkloadPhase{"tensors", 0, {big}}}},
                             WorkloadStep{2, {WorkloadPhase{"tensors", 100'000, {small}}}}};
  NullTraceSink trace;
  RunReport report = run_simulation(scenario, {}, trace);
  ASSERT_TRUE(report.workload.finished);
  ASSERT_EQ(report.workload.steps.size(), 2u);
  ASSERT_EQ(report.workload.steps[0].transfers.size(), 1u);
  EXPECT_EQ(report.workload.steps[0].transfers[0].status.code(), StatusCode::kResourceLimit);
  // The harness ran out, not the protocol: bad input, never a safety problem.
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_EQ(report.problems[0].kind, ProblemKind::kBadInput) << joined(report.problems);
  ASSERT_EQ(report.workload.steps[1].transfers.size(), 1u);
  EXPECT_TRUE(report.workload.steps[1].transfers[0].status.is_ok())
      << report.workload.steps[1].transfers[0].status.to_string();
  EXPECT_TRUE(report.workload.steps[1].transfers[0].verified);
  EXPECT_EQ(report.workload.recvs_completed_twice, 0u);
  EXPECT_EQ(report.workload.recvs_failed, 1u);
}

TEST(WorkloadDriver, AFailedSendAfterItsRecvFailsThatRecvWithTheReason) {
  // Recv first, then the Send fails locally (no memory for its 9 GiB source in
  // payload mode). The request parked at the sender is answered with
  // ERROR_STATUS carrying the reason; nothing is left outstanding.
  Scenario scenario = load_scenario_file(kRoot + "/scenarios/quickstart.toml");
  auto [big, small] = failing_and_small();
  big.send_offset_ns = 50'000;
  scenario.workload.kind = "tensors";
  scenario.workload.steps = {WorkloadStep{1, {WorkloadPhase{"tensors", 0, {big, small}}}},
                             WorkloadStep{2, {WorkloadPhase{"tensors", 0, {small}}}}};
  NullTraceSink trace;
  RunReport report = run_simulation(scenario, {}, trace);
  ASSERT_TRUE(report.workload.finished) << joined(report.problems);
  const TransferResult& failed = report.workload.steps[0].transfers[0];
  EXPECT_EQ(failed.status.code(), StatusCode::kResourceLimit) << failed.status.to_string();
  EXPECT_NE(failed.status.message().find("too_big"), std::string::npos) << failed.status.message();
  EXPECT_TRUE(report.workload.steps[0].transfers[1].verified);
  EXPECT_TRUE(report.workload.steps[1].transfers[0].verified);
  EXPECT_EQ(report.workload.recvs_completed_twice, 0u);
  EXPECT_EQ(report.workload.recvs_failed, 1u);
  // The only problem the run reports is the failed transfer itself.
  for (const Problem& p : report.problems) {
    EXPECT_EQ(p.text.find("pending"), std::string::npos) << problem_line(p);
  }
}

TEST(SteadyState, EachTensorCostsOneControlMessageAndOneWrite) {
  Scenario scenario = load_scenario_file(kRoot + "/scenarios/quickstart.toml");
  // Run once with N steps and once with N+1 steps: the extra steady-state step
  // must add exactly one send (TENSOR_REQUEST) and one write per tensor.
  NullTraceSink trace;
  RunReport shorter = run_simulation(scenario, {}, trace);
  Scenario longer_scenario = scenario;
  WorkloadStep extra = longer_scenario.workload.steps.back();
  extra.step_id += 1000;
  longer_scenario.workload.steps.push_back(extra);
  RunReport longer = run_simulation(longer_scenario, {}, trace);
  ASSERT_TRUE(shorter.passed()) << joined(shorter.problems);
  ASSERT_TRUE(longer.passed()) << joined(longer.problems);
  uint64_t tensors = 0;
  for (const auto& phase : extra.phases) tensors += phase.transfers.size();
  ASSERT_GT(tensors, 0u);
  EXPECT_EQ(longer.total_stats.sends - shorter.total_stats.sends, tensors);
  EXPECT_EQ(longer.total_stats.rdma_writes_with_imm - shorter.total_stats.rdma_writes_with_imm,
            tensors);
  EXPECT_EQ(longer.total_stats.registrations, shorter.total_stats.registrations);
  EXPECT_EQ(longer.total_stats.cpu_copy_bytes, shorter.total_stats.cpu_copy_bytes);
  // Every tensor of the quickstart is on host or a GPUDirect GPU: no staging copies either.
  EXPECT_EQ(longer.total_stats.copy_engine_bytes, shorter.total_stats.copy_engine_bytes);
}

}  // namespace
}  // namespace tensorwire
