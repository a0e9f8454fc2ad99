#include "report/results_compare.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "report/results_json.h"
#include "report/results_reader.h"
#include "tests/report/sample_report.h"

namespace tensorwire::report {
namespace {

using testing_support::sample_report;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The line of `text` that starts with `prefix` (empty when none does).
std::string line_starting(const std::string& text, const std::string& prefix) {
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? end : end - at);
    if (line.rfind(prefix, 0) == 0) return line;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return "";
}

ResultsFile parsed(const std::string& text, const std::string& path) {
  Result<ResultsFile> f = parse_results_json(text, path);
  EXPECT_TRUE(f.is_ok()) << f.status().message();
  return f.is_ok() ? *f : ResultsFile{};
}

// What a verbs run of the sample would write: the simulator's numbers plus
// wall times twice as long (steps) and 2.5x / 2x as long (weights / bias).
MeasuredWallTimes sample_wall_times() {
  MeasuredWallTimes m;
  m.step_ns = {24'690, 16'200};
  m.transfer_ns = {{25'000, 8'000}, {25'000, 8'000}};
  return m;
}

// A: the simulator's results of the sample; B: the same with wall times.
struct SimulatedVsMeasured {
  ResultsFile a = parsed(results_json_text(sample_report()), "a.json");
  ResultsFile b = parsed(results_json_text(sample_report(), sample_wall_times()), "b.json");
};

TEST(ResultsCompare, RoundTripReadsBackTheTimesEachFileHolds) {
  const SimulatedVsMeasured files;
  ASSERT_EQ(files.a.steps.size(), 2u);
  EXPECT_EQ(files.a.backend, "sim");
  EXPECT_EQ(files.a.scenario_name, "sample");
  EXPECT_EQ(files.a.seed, 42u);
  EXPECT_EQ(files.a.steps[1].step_id, 1u);
  EXPECT_EQ(files.a.steps[1].backend_ns, 8'100);
  EXPECT_FALSE(files.a.steps[1].measured_ns.has_value());
  ASSERT_EQ(files.a.steps[1].tensors.size(), 2u);
  EXPECT_EQ(files.a.steps[1].tensors[1].name, "bias");
  EXPECT_EQ(files.a.steps[1].tensors[1].src, 1u);
  EXPECT_EQ(files.a.steps[1].tensors[1].dst, 0u);
  EXPECT_EQ(files.a.steps[1].tensors[1].backend_ns, 4'000);
  EXPECT_FALSE(files.a.steps[1].tensors[1].measured_ns.has_value());
  EXPECT_EQ(files.b.steps[1].measured_ns, 16'200);
  EXPECT_EQ(files.b.steps[1].tensors[0].measured_ns, 25'000);
}

TEST(ResultsCompare, MatchesStepsAndTensorsWithTimesAndRatios) {
  const SimulatedVsMeasured files;
  const ResultsComparison c = compare_results(files.a, files.b);
  EXPECT_EQ(c.steps_in_both, 2u);
  EXPECT_EQ(c.tensors_in_both, 4u);
  EXPECT_EQ(c.steps_only_in_a + c.steps_only_in_b + c.tensors_only_in_a + c.tensors_only_in_b, 0u);
  // step 0, weights, bias, step 1, weights, bias, the total.
  ASSERT_EQ(c.rows.size(), 7u);

  const ComparisonRow& step0 = c.rows[0];
  EXPECT_EQ(step0.kind, ComparisonRow::Kind::kStep);
  EXPECT_EQ(step0.a.ns, 12'345);
  EXPECT_EQ(step0.a.source, TimeSource::kSimulated);
  EXPECT_EQ(step0.b.ns, 24'690);
  EXPECT_EQ(step0.b.source, TimeSource::kMeasured);
  EXPECT_DOUBLE_EQ(*b_over_a(step0), 2.0);
  EXPECT_DOUBLE_EQ(*simulated_over_measured(step0), 0.5);

  const ComparisonRow& weights = c.rows[1];
  EXPECT_EQ(weights.kind, ComparisonRow::Kind::kTensor);
  EXPECT_EQ(weights.tensor, "weights");
  EXPECT_EQ(weights.a.ns, 10'000);
  EXPECT_EQ(weights.b.ns, 25'000);
  EXPECT_DOUBLE_EQ(*simulated_over_measured(weights), 0.4);

  const ComparisonRow& total = c.rows.back();
  EXPECT_EQ(total.kind, ComparisonRow::Kind::kTotal);
  EXPECT_EQ(total.a.ns, 12'345 + 8'100);
  EXPECT_EQ(total.b.ns, 24'690 + 16'200);
  EXPECT_DOUBLE_EQ(*simulated_over_measured(total), 0.5);
}

TEST(ResultsCompare, TextShowsBothTimesAndBothRatiosPerStepAndTensor) {
  const SimulatedVsMeasured files;
  const std::string text = comparison_text(files.a, files.b, compare_results(files.a, files.b));
  EXPECT_TRUE(contains(text, "A: a.json (backend sim, scenario sample, seed 42)\n")) << text;
  EXPECT_TRUE(contains(text, "B: b.json (backend sim, scenario sample, seed 42)\n")) << text;
  const std::string header = line_starting(text, "      ");
  EXPECT_TRUE(contains(header, "B/A")) << text;
  EXPECT_TRUE(contains(header, "sim/measured")) << text;
  EXPECT_EQ(line_starting(text, "step 0"),
            "step 0          12.3 us sim  24.7 us wall  2.000         0.500")
      << text;
  EXPECT_EQ(line_starting(text, "  weights 0->1"),
            "  weights 0->1  10.0 us sim  25.0 us wall  2.500         0.400")
      << text;
  EXPECT_EQ(line_starting(text, "steps in both"),
            "steps in both   20.4 us sim  40.9 us wall  2.000         0.500")
      << text;
  EXPECT_TRUE(contains(text, "steps: 2 in both, 0 only in A, 0 only in B; tensors: 4 in both, "
                             "0 only in A, 0 only in B\n"))
      << text;
}

TEST(ResultsCompare, TheMeasuredSideMayBeA) {
  const SimulatedVsMeasured files;
  const ResultsComparison c = compare_results(files.b, files.a);
  EXPECT_DOUBLE_EQ(*b_over_a(c.rows[0]), 0.5);
  EXPECT_DOUBLE_EQ(*simulated_over_measured(c.rows[0]), 0.5);
}

TEST(ResultsCompare, TwoSimulatedRunsHaveARatioButNoSimulatedOverMeasured) {
  const ResultsFile a = parsed(results_json_text(sample_report()), "a.json");
  const ResultsComparison c = compare_results(a, a);
  EXPECT_DOUBLE_EQ(*b_over_a(c.rows[0]), 1.0);
  EXPECT_FALSE(simulated_over_measured(c.rows[0]).has_value());
  const std::string text = comparison_text(a, a, c);
  EXPECT_EQ(line_starting(text, "step 1"),
            "step 1          8.10 us sim  8.10 us sim  1.000             -")
      << text;
}

TEST(ResultsCompare, StepsAndTensorsInOneFileOnlyAreListedNotDropped) {
  nlohmann::json a = nlohmann::json::parse(results_json_text(sample_report()));
  nlohmann::json b = a;
  // A: a third step; B: step 0 without bias and with an extra tensor.
  nlohmann::json step2 = a["steps"][1];
  step2["step_id"] = 2;
  a["steps"].push_back(step2);
  b["steps"][0]["per_tensor"].erase(1);
  nlohmann::json extra = b["steps"][0]["per_tensor"][0];
  extra["name"] = "momentum";
  b["steps"][0]["per_tensor"].push_back(extra);

  const ResultsFile fa = parsed(a.dump(), "a.json");
  const ResultsFile fb = parsed(b.dump(), "b.json");
  const ResultsComparison c = compare_results(fa, fb);
  EXPECT_EQ(c.steps_in_both, 2u);
  EXPECT_EQ(c.steps_only_in_a, 1u);
  EXPECT_EQ(c.steps_only_in_b, 0u);
  EXPECT_EQ(c.tensors_in_both, 3u);
  EXPECT_EQ(c.tensors_only_in_a, 1 + 2u);  // bias of step 0, both of step 2
  EXPECT_EQ(c.tensors_only_in_b, 1u);

  const std::string text = comparison_text(fa, fb, c);
  EXPECT_TRUE(contains(line_starting(text, "  bias 1->0"), "only in A")) << text;
  EXPECT_TRUE(contains(line_starting(text, "  momentum 0->1"), "only in B")) << text;
  EXPECT_TRUE(contains(line_starting(text, "step 2"), "only in A")) << text;
  // B's extra tensor comes after A's tensors of the same step.
  EXPECT_LT(text.find("  bias 1->0"), text.find("  momentum 0->1")) << text;
  EXPECT_LT(text.find("  momentum 0->1"), text.find("step 1")) << text;
  // The total adds only the steps both files timed.
  EXPECT_EQ(c.rows.back().a.ns, 12'345 + 8'100);
}

TEST(ResultsCompare, AStepThatNeverFinishedHasNoTimeAndNoRatio) {
  RunReport unfinished = sample_report();
  unfinished.workload.finished = false;
  unfinished.workload.steps[1].end_ns = 0;  // what the driver leaves: duration_ns < 0
  unfinished.workload.steps[1].transfers[1].done = false;
  unfinished.step_wire_bytes.pop_back();
  const ResultsFile a = parsed(results_json_text(sample_report()), "a.json");
  const ResultsFile b = parsed(results_json_text(unfinished), "b.json");
  EXPECT_FALSE(b.steps[1].backend_ns.has_value());
  EXPECT_FALSE(b.steps[1].tensors[1].backend_ns.has_value());

  const ResultsComparison c = compare_results(a, b);
  const std::string text = comparison_text(a, b, c);
  EXPECT_EQ(line_starting(text, "step 1"),
            "step 1          8.10 us sim            -      -             -  never finished in B")
      << text;
  EXPECT_TRUE(contains(text, "never completed in B")) << text;
  EXPECT_EQ(c.rows.back().a.ns, 12'345);  // step 0 only
}

TEST(ResultsCompare, TheSameInputsGiveTheSameText) {
  const SimulatedVsMeasured files;
  EXPECT_EQ(comparison_text(files.a, files.b, compare_results(files.a, files.b)),
            comparison_text(files.a, files.b, compare_results(files.a, files.b)));
}

}  // namespace
}  // namespace tensorwire::report
