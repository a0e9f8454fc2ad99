// The legacy verbs protocol in the simulator and under the model checker:
// every tensor is copied into and out of its tensor buffer, a steady step
// costs four control messages per tensor, a tensor that grows reallocates
// both buffers, and the planted ACK race is found by `check`, named by the
// message-buffer invariant, and replays; nothing is found without it; faults
// end in errors, not hangs.
#include <gtest/gtest.h>

#include <string>

#include "core/coverage.h"
#include "core/trace_sink.h"
#include "model/explorer.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::tf_legacy {
namespace {

// 2 ranks, 3 steps, one float32 tensor of `elements` from 0 to 1, growing
// to `grown` elements at step 3 when nonzero.
std::string scenario_text(uint64_t elements, uint64_t grown, const std::string& memory) {
  std::string s =
      "[cluster]\nnodes = 2\ngpus_per_node = 1\n[protocol]\nname = \"tf_verbs_legacy\"\n"
      "[workload]\nkind = \"tensors\"\nsteps = 3\n[[workload.tensor]]\nname = \"w\"\nsrc = 0\n"
      "dst = 1\nshape = [" + std::to_string(elements) + "]\nsrc_memory = \"" + memory +
      "\"\ndst_memory = \"" + memory + "\"\n";
  if (grown > 0) s += "[[workload.change]]\nstep = 3\ntensor = \"w\"\nshape = [" + std::to_string(grown) + "]\n";
  return s;
}

RunReport run_text(const std::string& text) {
  NullTraceSink trace;
  return run_simulation(load_scenario_string(text, "legacy_test.toml"), SimulationOptions{}, trace);
}

uint64_t total(const RunReport& r, const std::string& counter) {
  uint64_t n = 0;
  for (const ProtocolCounters& c : r.protocol_counters) n += counter_value(c, counter);
  return n;
}

TEST(LegacyVerbs, EveryTensorIsCopiedIntoAndOutOfItsBuffer) {
  const RunReport r = run_text(scenario_text(1000, 0, "host"));
  ASSERT_TRUE(r.passed());
  EXPECT_EQ(total(r, "tensor_writes"), 3u);
  EXPECT_EQ(total(r, "cpu_copies"), 6u);  // in on the sender, out on the receiver
  EXPECT_EQ(total(r, "copy_engine_copies"), 0u);
  // One BUFFER_REQUEST/RESPONSE pair, then the buffers are reused.
  EXPECT_EQ(total(r, "buffer_request_sent"), 1u);
  EXPECT_EQ(total(r, "buffer_reallocations"), 0u);
  // Per step: TENSOR_REQUEST, its ACK, BUFFER_IDLE, its ACK.
  EXPECT_EQ(total(r, "tensor_request_sent"), 3u);
  EXPECT_EQ(total(r, "buffer_idle_sent"), 3u);
  EXPECT_EQ(total(r, "ack_sent"), 3u + 3u + 2u);
}

TEST(LegacyVerbs, GpuTensorsAreStagedThroughHostOnBothSides) {
  const RunReport r = run_text(scenario_text(256, 0, "gpu0"));
  ASSERT_TRUE(r.passed());
  EXPECT_EQ(total(r, "copy_engine_copies"), 6u);  // GPU -> host, host -> GPU, each step
  EXPECT_EQ(total(r, "cpu_copies"), 6u);
}

TEST(LegacyVerbs, AGrowingTensorReallocatesItsBuffers) {
  const RunReport r = run_text(scenario_text(16, 4096, "host"));
  ASSERT_TRUE(r.passed());
  EXPECT_EQ(total(r, "buffer_request_sent"), 2u);
  EXPECT_EQ(total(r, "buffer_reallocations"), 1u);
}

Scenario legacy_model() {
  return load_scenario_file(std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_tf_verbs_legacy.toml");
}

model::CheckOptions dfs() {
  model::CheckOptions o;
  o.strategy = model::CheckStrategy::kDfs;
  o.max_schedules = 300;
  return o;
}

TEST(LegacyVerbsCheck, NothingIsFoundWithoutABug) {
  const model::CheckReport r = model::check(legacy_model(), dfs());
  EXPECT_EQ(r.outcome, model::CheckOutcome::kNothingFound);
}

// The seed's wire could not fail a peer's Recv; with ERROR every fault kind
// ends every Recv and Send (no liveness violation), and ERROR is both sent
// and acted upon.
TEST(LegacyVerbsCheck, EveryFaultEndsCleanlyWithAnError) {
  model::CheckOptions o;
  o.strategy = model::CheckStrategy::kRandom;
  o.max_schedules = 200;
  o.faults = {model::FaultKind::kQpError, model::FaultKind::kRegistrationFailure,
              model::FaultKind::kCrash, model::FaultKind::kStepAbort};
  o.max_faults = 2;
  const model::CheckReport r = model::check(legacy_model(), o);
  EXPECT_EQ(r.outcome, model::CheckOutcome::kNothingFound)
      << (r.counterexample && !r.counterexample->problems.empty() ? r.counterexample->problems[0].text : "");
  for (const CoverageGroup& g : r.coverage.groups()) {
    for (const CoverageItem& i : g.items) {
      if (i.name == "RDMA_MESSAGE_ERROR" || i.name == "tensor buffer refused: ERROR to the sender") {
        EXPECT_GT(i.count, 0u) << g.name << ": " << i.name;
      }
    }
  }
}

TEST(LegacyVerbsCheck, MessageBufferIdleBeforeAckIsFoundAndItsScheduleReplays) {
  Scenario s = legacy_model();
  ASSERT_TRUE(s.protocol.descriptor().plant_bug(s.protocol.options, "idle_before_ack"));
  const model::CheckOptions o = dfs();
  const model::CheckReport r = model::check(s, o);
  ASSERT_EQ(r.outcome, model::CheckOutcome::kSafety);
  ASSERT_TRUE(r.counterexample.has_value());
  ASSERT_FALSE(r.counterexample->problems.empty());
  const std::string found = r.counterexample->problems[0].text;
  EXPECT_NE(found.find("before the ACK of the previous one"), std::string::npos) << found;
  model::ReplayStrategy replay(r.counterexample->choices);
  NullTraceSink trace;
  const model::Execution again = model::run_execution(model::model_scenario(s), o.seed, replay,
                                                      trace, nullptr, model::FaultOffer{});
  EXPECT_FALSE(again.diverged);
  EXPECT_EQ(again.outcome, r.outcome);
  ASSERT_FALSE(again.problems.empty());
  EXPECT_EQ(again.problems[0].text, found);
}

// With a step aborted on the receiver, the next step's TENSOR_REQUEST can
// reach the sender while the aborted step's write out of the buffer is still
// in flight; the seed grows the buffer only when it is idle on both sides.
// The planted bug frees it there: the DMA sanitizer names the write still
// reading it, and the schedule replays.
TEST(LegacyVerbsCheck, ReallocWhileWritePendingIsFoundAfterAnAbortAndReplays) {
  Scenario s = legacy_model();
  ASSERT_TRUE(s.protocol.descriptor().plant_bug(s.protocol.options, "realloc_while_write_pending"));
  model::CheckOptions o;
  o.strategy = model::CheckStrategy::kRandom;
  o.max_schedules = 100;
  o.faults = {model::FaultKind::kStepAbort};
  const model::CheckReport r = model::check(s, o);
  ASSERT_EQ(r.outcome, model::CheckOutcome::kSafety);
  ASSERT_TRUE(r.counterexample.has_value());
  ASSERT_FALSE(r.counterexample->problems.empty());
  const std::string found = r.counterexample->problems[0].text;
  EXPECT_NE(found.find("DMA sanitizer"), std::string::npos) << found;
  EXPECT_NE(found.find("still reads it"), std::string::npos) << found;
  model::ReplayStrategy replay(r.counterexample->choices);
  NullTraceSink trace;
  const model::FaultOffer offer{r.counterexample_faults, o.max_faults, {}};
  const model::Execution again =
      model::run_execution(model::model_scenario(s), o.seed, replay, trace, nullptr, offer);
  EXPECT_FALSE(again.diverged);
  ASSERT_FALSE(again.problems.empty());
  EXPECT_EQ(again.problems[0].text, found);
  // The same search without the bug: the tensor id waits for the write.
  EXPECT_EQ(model::check(legacy_model(), o).outcome, model::CheckOutcome::kNothingFound);
}

}  // namespace
}  // namespace tensorwire::tf_legacy
