// "Where the time went" against hand-computed values on small scenarios, the
// lines the summary prints for the shipped vgg16 and broadcast scenarios, the
// step-time spread, and jitter's determinism through whole runs.
#include "report/time_account.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/trace_sink.h"
#include "report/results_json.h"
#include "report/summary.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::report {
namespace {

const std::string kRoot = TENSORWIRE_SOURCE_ROOT;

// One 1 MiB tensor from rank 0 to rank 1 over one 100 Gbps link, per step.
std::string one_tensor(int steps, const std::string& extra_cluster = "") {
  return "name = \"one\"\n[run]\nmode = \"timing\"\n[cluster]\nnodes = 2\nnic_bandwidth = \"100Gbps\"\n" +
         extra_cluster + "[workload]\nkind = \"tensors\"\nsteps = " + std::to_string(steps) +
         "\n[[workload.tensor]]\nname = \"w\"\nsrc = 0\ndst = 1\ndtype = \"uint8\"\nshape = [1048576]\n";
}

RunReport run_text(const std::string& text, uint64_t seed = 0) {
  const Scenario scenario = load_scenario_string(text, "t.toml", "");
  SimulationOptions options;
  options.seed = seed;
  options.has_seed = seed != 0;
  NullTraceSink trace;
  return run_simulation(scenario, options, trace);
}

RunReport run_file(const std::string& name) {
  const Scenario scenario = load_scenario_file(kRoot + "/scenarios/" + name);
  SimulationOptions options;
  options.timing_only = true;
  NullTraceSink trace;
  return run_simulation(scenario, options, trace);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TimeAccount, OneTensorOverOneLinkIsBoundByThatLinksSendSide) {
  const RunReport report = run_text(one_tensor(4));
  ASSERT_TRUE(report.passed());
  const std::optional<TimeAccount> a = time_account(report);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->steps, 4u);
  EXPECT_EQ(a->bottleneck.name, "node0/nic tx");
  EXPECT_EQ(a->bottleneck.kind, ResourceKind::kNicSend);
  // Each step moves 1 MiB: 1,048,576 B / 12.5 GB/s = 83,886.08 ns of the send
  // side, and a few control bytes (the first step's meta-data update).
  EXPECT_GE(a->bottleneck.bytes, 4u << 20);
  EXPECT_LT(a->bottleneck.bytes, (4u << 20) + 1024);
  EXPECT_NEAR(static_cast<double>(a->bottleneck.busy_ns),
              static_cast<double>(a->bottleneck.bytes) / 12.5, 0.5);
  EXPECT_NEAR(static_cast<double>(a->lower_bound_ns), 83886.08, 1024 / 12.5 / 4 + 1);
  // The control messages cross the other way: node0's receive side barely works.
  EXPECT_EQ(a->busy.front().name, "node0/nic tx");
  TimeNs steps_ns = 0;
  for (const StepResult& s : report.workload.steps) steps_ns += s.end_ns - s.start_ns;
  EXPECT_EQ(a->achieved_ns, steps_ns / 4);
  EXPECT_DOUBLE_EQ(a->efficiency, static_cast<double>(a->lower_bound_ns) /
                                      static_cast<double>(a->achieved_ns));
  EXPECT_GT(a->efficiency, 0.0);
  EXPECT_LE(a->efficiency, 1.0);
}

TEST(TimeAccount, ResultsCarryItAsFlatNumbers) {
  const RunReport report = run_text(one_tensor(2));
  const nlohmann::ordered_json j = results_json(report);
  const TimeAccount a = *time_account(report);
  EXPECT_EQ(j.at("bottleneck"), "node0/nic tx");
  EXPECT_EQ(j.at("lower_bound_ns"), a.lower_bound_ns);
  EXPECT_DOUBLE_EQ(j.at("efficiency").get<double>(), a.efficiency);
  EXPECT_DOUBLE_EQ(j.at("bottleneck_utilisation").get<double>(), a.bottleneck_utilisation);
  EXPECT_TRUE(j.at("step_time_p50_ns").is_number_integer());
  EXPECT_TRUE(j.at("step_time_max_ns").is_number_integer());
  EXPECT_FALSE(j.contains("jitter")) << "no jitter model, no jitter key";
  ASSERT_TRUE(j.at("resources").is_array());
  EXPECT_EQ(j.at("resources").at(0).at("name"), "node0/nic tx");
  EXPECT_EQ(j.at("resources").at(0).at("bytes"), a.bottleneck.bytes);
  EXPECT_EQ(j.at("resources").at(0).at("busy_ns"), a.bottleneck.busy_ns);
}

TEST(TimeAccount, TheSummarySaysWhereTheTimeWent) {
  const std::string s = summary_text(run_text(one_tensor(2)));
  EXPECT_TRUE(contains(s, "where the time went (2 steps")) << s;
  EXPECT_TRUE(contains(s, "  bottleneck              node0/nic tx (nic send)")) << s;
  EXPECT_TRUE(contains(s, "  resource bound          83.9 us (its busy time 168 us / 2 steps)")) << s;
  EXPECT_TRUE(contains(s, "  efficiency              ")) << s;
  EXPECT_FALSE(contains(s, "jitter")) << s;
}

TEST(TimeAccount, Vgg16SummaryHasTheBottleneckAndEfficiencyLines) {
  const RunReport report = run_file("vgg16_8x4.toml");
  const std::string s = summary_text(report);
  EXPECT_TRUE(contains(s, "where the time went (3 steps")) << s;
  // The parameter servers' ports carry every worker's tensors.
  EXPECT_TRUE(contains(s, "  bottleneck              node0/nic tx (nic send)")) << s;
  EXPECT_TRUE(contains(s, "  efficiency              ")) << s;
  const TimeAccount a = *time_account(report);
  EXPECT_GT(a.efficiency, 0.0);
  EXPECT_LE(a.efficiency, 1.0);
}

TEST(TimeAccount, BroadcastIsMeasuredAgainstItsPlansBound) {
  const RunReport report = run_file("broadcast_8x4.toml");
  ASSERT_TRUE(report.passed());
  const std::string s = summary_text(report);
  EXPECT_TRUE(contains(s, "where the time went (the operation")) << s;
  EXPECT_TRUE(contains(s, "  bottleneck              ")) << s;
  EXPECT_TRUE(contains(s, "  plan bound              ")) << s;
  EXPECT_TRUE(contains(s, "  efficiency              ")) << s;
  const TimeAccount a = *time_account(report);
  ASSERT_TRUE(a.plan_bound.has_value());
  const nlohmann::ordered_json j = results_json(report);
  // The account's own numbers, and the tighter bound of the two.
  EXPECT_EQ(a.plan_bound->bound_ns, j.at("lower_bound").at("total_ns").get<TimeNs>());
  EXPECT_EQ(a.achieved_ns, j.at("finish_ns").get<TimeNs>());
  EXPECT_EQ(a.lower_bound_ns, std::max(a.plan_bound->bound_ns, a.resource_bound_ns));
  EXPECT_EQ(j.at("plan_bound_ns"), a.plan_bound->bound_ns);
  EXPECT_GT(a.efficiency, 0.0);
  EXPECT_LE(a.efficiency, 1.0);
}

TEST(StepTimeSpread, IsByNearestRank) {
  RunReport r;
  for (int i = 100; i >= 1; --i) {  // durations 100 .. 1 ns, out of order
    StepResult s;
    s.start_ns = 1000 * i;
    s.end_ns = s.start_ns + i;
    r.workload.steps.push_back(s);
    r.step_wire_bytes.push_back(0);
  }
  const StepTimeSpread spread = *step_time_spread(r);
  EXPECT_EQ(spread.p50_ns, 50);
  EXPECT_EQ(spread.p99_ns, 99);
  EXPECT_EQ(spread.max_ns, 100);
  r.step_wire_bytes.resize(1);  // one finished step: every percentile is it
  const StepTimeSpread one = *step_time_spread(r);
  EXPECT_EQ(one.p50_ns, 100);
  EXPECT_EQ(one.p99_ns, 100);
}

const std::string kJitter =
    "[cluster.jitter]\n"
    "message_latency = { distribution = \"lognormal\", median = \"2us\", sigma = 1.0 }\n";

TEST(JitterRun, TheSameSeedGivesByteIdenticalResults) {
  EXPECT_EQ(results_json_text(run_text(one_tensor(8, kJitter), 5)),
            results_json_text(run_text(one_tensor(8, kJitter), 5)));
}

TEST(JitterRun, AnotherSeedGivesOtherStepTimes) {
  const RunReport a = run_text(one_tensor(8, kJitter), 5);
  const RunReport b = run_text(one_tensor(8, kJitter), 6);
  ASSERT_EQ(a.workload.steps.size(), b.workload.steps.size());
  size_t differing = 0;
  for (size_t i = 0; i < a.workload.steps.size(); ++i) {
    differing += a.workload.steps[i].end_ns - a.workload.steps[i].start_ns !=
                 b.workload.steps[i].end_ns - b.workload.steps[i].start_ns;
  }
  EXPECT_GT(differing, 0u);
  const std::string s = summary_text(a);
  EXPECT_TRUE(contains(s, "  jitter                  message latency lognormal(median 2.00 us, sigma 1)")) << s;
  EXPECT_TRUE(contains(s, "  step time               median ")) << s;
  EXPECT_TRUE(contains(s, ", p99 ")) << s;
  EXPECT_EQ(results_json(a).at("jitter"), a.jitter);
}

TEST(JitterRun, AnEmptyJitterTableChangesNothing) {
  RunReport plain = run_text(one_tensor(3), 5);
  RunReport empty = run_text(one_tensor(3, "[cluster.jitter]\n"), 5);
  EXPECT_TRUE(empty.jitter.empty());
  EXPECT_EQ(results_json_text(plain), results_json_text(empty));
  // Without jitter the seed moves no time (it only seeds tensor content).
  const nlohmann::ordered_json other = results_json(run_text(one_tensor(3), 6));
  EXPECT_EQ(results_json(plain).at("steps"), other.at("steps"));
}

}  // namespace
}  // namespace tensorwire::report
