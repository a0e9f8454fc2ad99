// MVAPICH2-GPU in the simulator and under the model checker: a GPU buffer the
// NIC cannot reach moves in blocks through vbufs (one write and one FIN per
// block), naive staging moves it as one block, host buffers go straight from
// and into the user's memory, short tensors go eager; and each planted bug is
// found by `check` on the shipped model scenario, its schedule replays to the
// same violation, and nothing is found without it.
#include <gtest/gtest.h>

#include <string>

#include "core/protocols/protocol_registry.h"
#include "core/trace_sink.h"
#include "model/explorer.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::mvapich2 {
namespace {

// 2 ranks without GPUDirect; one float32 tensor of `elements` from 0 to 1,
// from `src` memory into `dst` memory, `steps` steps, RNR an error.
std::string scenario_text(const std::string& options, uint64_t elements, const std::string& src,
                          const std::string& dst, uint32_t steps = 1) {
  return "[cluster]\nnodes = 2\ngpus_per_node = 1\ngpu_direct = false\nrnr_retry_count = 0\n"
         "[protocol]\nname = \"mvapich2_gpu\"\n[protocol.mvapich2_gpu]\n" + options +
         "[workload]\nkind = \"tensors\"\nsteps = " + std::to_string(steps) +
         "\n[[workload.tensor]]\nname = \"t\"\nsrc = 0\ndst = 1\nshape = [" +
         std::to_string(elements) + "]\nsrc_memory = \"" + src + "\"\ndst_memory = \"" + dst +
         "\"\n";
}

RunReport run_text(const std::string& text) {
  NullTraceSink trace;
  return run_simulation(load_scenario_string(text, "mv2_test.toml"), SimulationOptions{}, trace);
}

uint64_t total(const RunReport& r, const std::string& counter) {
  uint64_t n = 0;
  for (const ProtocolCounters& c : r.protocol_counters) n += counter_value(c, counter);
  return n;
}

std::string problems_of(const RunReport& r) {
  std::string s;
  for (const Problem& p : r.problems) s += problem_line(p) + "\n";
  return s;
}

TEST(Mv2, AGpuBufferMovesInBlocksThroughVbufs) {
  // 40,000 bytes in 4 KiB blocks: 10 blocks, each copied down, written, FIN'd
  // and copied up; 3 vbufs a side, so vbufs are offered again.
  const RunReport r = run_text(scenario_text(
      "block_bytes = \"4KiB\"\nvbuf_count = 3\neager_max_bytes = 64\n", 10000, "gpu0", "gpu0"));
  ASSERT_TRUE(r.passed()) << problems_of(r);
  EXPECT_EQ(total(r, "rts_sent"), 1u);
  EXPECT_EQ(total(r, "rdma_writes"), 10u);
  EXPECT_EQ(total(r, "fin_sent"), 10u);
  EXPECT_EQ(total(r, "bytes_written"), 40000u);
  EXPECT_EQ(total(r, "copies"), 20u) << "one copy down and one up per block";
  EXPECT_GE(total(r, "cts_sent"), 2u) << "returned vbufs are offered in later CTS";
  EXPECT_EQ(r.total_stats.rdma_writes, 10u) << "the NIC saw the same writes";
}

TEST(Mv2, NaiveStagingMovesTheWholeBufferAsOneBlock) {
  const RunReport r = run_text(scenario_text(
      "staging = \"naive\"\nblock_bytes = \"4KiB\"\neager_max_bytes = 64\n", 10000, "gpu0", "gpu0"));
  ASSERT_TRUE(r.passed()) << problems_of(r);
  EXPECT_EQ(total(r, "rdma_writes"), 1u);
  EXPECT_EQ(total(r, "fin_sent"), 1u);
  EXPECT_EQ(total(r, "cts_sent"), 1u);
  EXPECT_EQ(total(r, "copies"), 2u);
}

TEST(Mv2, HostBuffersGoStraightInOneWrite) {
  const RunReport r = run_text(scenario_text("block_bytes = \"4KiB\"\neager_max_bytes = 64\n",
                                             10000, "host", "host"));
  ASSERT_TRUE(r.passed()) << problems_of(r);
  EXPECT_EQ(total(r, "rdma_writes"), 1u) << "nothing to overlap: one block";
  EXPECT_EQ(total(r, "copies"), 0u);
}

TEST(Mv2, AStagedSourceIsPipelinedIntoAHostDestination) {
  const RunReport r = run_text(scenario_text(
      "block_bytes = \"4KiB\"\nvbuf_count = 2\neager_max_bytes = 64\n", 10000, "gpu0", "host"));
  ASSERT_TRUE(r.passed()) << problems_of(r);
  EXPECT_EQ(total(r, "rdma_writes"), 10u);
  EXPECT_EQ(total(r, "cts_sent"), 1u) << "the user's buffer is offered whole";
  EXPECT_EQ(total(r, "copies"), 10u) << "copies down only";
}

TEST(Mv2, ShortTensorsGoEager) {
  const RunReport r = run_text(scenario_text("eager_max_bytes = 64\n", 16, "gpu0", "gpu0", 2));
  ASSERT_TRUE(r.passed()) << problems_of(r);
  EXPECT_EQ(total(r, "eager_sent"), 2u);
  EXPECT_EQ(total(r, "rts_sent"), 0u);
  EXPECT_EQ(total(r, "inline_bytes"), 2u * 64u);
}

TEST(Mv2, OptionsOutOfRangeAreRefused) {
  auto load = [](const std::string& o) {
    return load_scenario_string(scenario_text(o, 1, "host", "host"), "x.toml");
  };
  EXPECT_ANY_THROW(load("staging = \"eager\"\n"));
  EXPECT_ANY_THROW(load("block_bytes = 8\n"));
  EXPECT_ANY_THROW(load("vbuf_count = 0\n"));
  EXPECT_ANY_THROW(load("vbuf_count = 65\n"));
  EXPECT_ANY_THROW(load("receive_pool_size = 3\n"));
  EXPECT_ANY_THROW(load("eager_max_bytes = \"1MiB\"\n"));
  EXPECT_ANY_THROW(load("no_such_option = 1\n"));
  EXPECT_NO_THROW(load("staging = \"naive\"\nblock_bytes = \"1MiB\"\nvbuf_count = 64\n"));
}

Scenario model_mvapich2_gpu() {
  return load_scenario_file(std::string(TENSORWIRE_SOURCE_ROOT) +
                            "/scenarios/model_mvapich2_gpu.toml");
}

model::CheckOptions dfs() {
  model::CheckOptions o;
  o.strategy = model::CheckStrategy::kDfs;
  o.max_schedules = 200;
  return o;
}

TEST(Mv2Check, NothingIsFoundWithoutABug) {
  const model::CheckReport r = model::check(model_mvapich2_gpu(), dfs());
  EXPECT_EQ(r.outcome, model::CheckOutcome::kNothingFound);
}

class Mv2PlantedBug : public ::testing::TestWithParam<const char*> {};

TEST_P(Mv2PlantedBug, IsFoundAndItsScheduleReplays) {
  Scenario s = model_mvapich2_gpu();
  ASSERT_TRUE(s.protocol.descriptor().plant_bug(s.protocol.options, GetParam()));
  const model::CheckOptions o = dfs();
  const model::CheckReport r = model::check(s, o);
  ASSERT_EQ(r.outcome, model::CheckOutcome::kSafety);
  ASSERT_TRUE(r.counterexample.has_value());
  ASSERT_FALSE(r.counterexample->problems.empty());
  const std::string found = r.counterexample->problems[0].text;
  // Each bug breaks its own invariant.
  const std::string expected = std::string(GetParam()) == "vbuf_reuse_at_write_post"
                                   ? "the vbuf was reused before the write completed"
                                   : "was sent before its RDMA write completed";
  EXPECT_NE(found.find(expected), std::string::npos) << found;
  model::ReplayStrategy replay(r.counterexample->choices);
  NullTraceSink trace;
  const model::Execution again = model::run_execution(model::model_scenario(s), o.seed, replay,
                                                      trace, nullptr, model::FaultOffer{});
  EXPECT_FALSE(again.diverged);
  EXPECT_EQ(again.outcome, r.outcome);
  ASSERT_FALSE(again.problems.empty());
  EXPECT_EQ(again.problems[0].text, found);
}

INSTANTIATE_TEST_SUITE_P(Zoo, Mv2PlantedBug,
                         ::testing::Values("vbuf_reuse_at_write_post",
                                           "fin_before_write_completion"));

}  // namespace
}  // namespace tensorwire::mvapich2
