// OneFlow CommNet in the simulator and under the model checker: long tensors
// are read in chunks with a bounded number in flight, the receive pool never
// runs out (receiver-not-ready is an error in these scenarios), and each
// planted bug is found by `check` on the shipped model scenario, its schedule
// replays to the same violation, and nothing is found without it.
#include <gtest/gtest.h>

#include <string>

#include "core/protocols/protocol_registry.h"
#include "core/trace_sink.h"
#include "model/explorer.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::oneflow {
namespace {

// 2 ranks; `tensors` float32 tensors of `elements` each from 0 to 1 and as
// many back, 2 steps, a 4-receive pool and RNR an error.
std::string scenario_text(const std::string& options, uint32_t tensors, uint64_t elements) {
  std::string s =
      "[cluster]\nnodes = 2\nrnr_retry_count = 0\n[protocol]\nname = \"oneflow_commnet\"\n"
      "[protocol.oneflow_commnet]\n" + options +
      "[workload]\nkind = \"tensors\"\nsteps = 2\n";
  for (uint32_t i = 0; i < 2 * tensors; ++i) {
    s += "[[workload.tensor]]\nname = \"t" + std::to_string(i) + "\"\nsrc = " +
         std::to_string(i % 2) + "\ndst = " + std::to_string(1 - i % 2) + "\nshape = [" +
         std::to_string(elements) + "]\n";
  }
  return s;
}

RunReport run_text(const std::string& text) {
  NullTraceSink trace;
  return run_simulation(load_scenario_string(text, "commnet_test.toml"), SimulationOptions{}, trace);
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

TEST(CommNet, LongTensorsAreReadInChunks) {
  // 20,000 bytes in 4 KiB chunks: 5 reads per tensor, 2 at a time.
  const RunReport r = run_text(scenario_text(
      "eager_max_bytes = 64\nread_chunk_bytes = \"4KiB\"\nmax_reads_in_flight = 2\n", 1, 5000));
  ASSERT_TRUE(r.passed()) << problems_of(r);
  EXPECT_EQ(total(r, "rdma_reads"), 2u * 2u * 5u);
  EXPECT_EQ(total(r, "bytes_read"), 2u * 2u * 20000u);
  EXPECT_EQ(total(r, "descriptor_sent"), 4u);
  EXPECT_EQ(total(r, "read_done_sent"), 4u);
  EXPECT_EQ(total(r, "eager_tensor_sent"), 0u);
  EXPECT_EQ(r.total_stats.rdma_reads, 2u * 2u * 5u) << "the NIC saw the same reads";
}

TEST(CommNet, ShortTensorsGoInline) {
  const RunReport r = run_text(scenario_text("eager_max_bytes = 64\n", 3, 16));
  ASSERT_TRUE(r.passed()) << problems_of(r);
  EXPECT_EQ(total(r, "eager_tensor_sent"), 2u * 3u * 2u);
  EXPECT_EQ(total(r, "rdma_reads"), 0u);
  EXPECT_EQ(total(r, "inline_bytes"), 2u * 3u * 2u * 64u);
}

TEST(CommNet, TheReceivePoolNeverRunsOut) {
  // 24 tensors a step, each way, through 4 receives per peer: the senders
  // wait for credits instead of finding no receive (an error here).
  const RunReport r = run_text(scenario_text("receive_pool_size = 4\neager_max_bytes = 64\n", 12, 8));
  ASSERT_TRUE(r.passed()) << problems_of(r);
  EXPECT_EQ(r.total_stats.rnr_retries, 0u);
  EXPECT_GT(total(r, "credit_waits"), 0u) << "the window was full at times";
  EXPECT_GT(total(r, "credit_sent"), 0u);
}

TEST(CommNet, OptionsOutOfRangeAreRefused) {
  EXPECT_ANY_THROW(load_scenario_string(scenario_text("receive_pool_size = 3\n", 1, 1), "x.toml"));
  EXPECT_ANY_THROW(load_scenario_string(scenario_text("read_chunk_bytes = 0\n", 1, 1), "x.toml"));
  EXPECT_ANY_THROW(load_scenario_string(scenario_text("max_reads_in_flight = 0\n", 1, 1), "x.toml"));
  EXPECT_ANY_THROW(load_scenario_string(scenario_text("eager_max_bytes = \"1MiB\"\n", 1, 1), "x.toml"));
  EXPECT_ANY_THROW(load_scenario_string(scenario_text("no_such_option = 1\n", 1, 1), "x.toml"));
}

Scenario model_oneflow() {
  return load_scenario_file(std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_oneflow.toml");
}

model::CheckOptions dfs() {
  model::CheckOptions o;
  o.strategy = model::CheckStrategy::kDfs;
  o.max_schedules = 200;
  return o;
}

TEST(CommNetCheck, NothingIsFoundWithoutABug) {
  const model::CheckReport r = model::check(model_oneflow(), dfs());
  EXPECT_EQ(r.outcome, model::CheckOutcome::kNothingFound);
}

class CommNetPlantedBug : public ::testing::TestWithParam<const char*> {};

TEST_P(CommNetPlantedBug, IsFoundAndItsScheduleReplays) {
  Scenario s = model_oneflow();
  ASSERT_TRUE(s.protocol.descriptor().plant_bug(s.protocol.options, GetParam()));
  const model::CheckOptions o = dfs();
  const model::CheckReport r = model::check(s, o);
  ASSERT_EQ(r.outcome, model::CheckOutcome::kSafety);
  ASSERT_TRUE(r.counterexample.has_value());
  ASSERT_FALSE(r.counterexample->problems.empty());
  const std::string found = r.counterexample->problems[0].text;
  // Each bug breaks its own invariant.
  const std::string expected = std::string(GetParam()) == "release_at_read_post"
                                   ? "of its reads in flight"
                                   : "a receive was not posted again";
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

INSTANTIATE_TEST_SUITE_P(Zoo, CommNetPlantedBug,
                         ::testing::Values("release_at_read_post", "no_repost_on_read_done"));

}  // namespace
}  // namespace tensorwire::oneflow
