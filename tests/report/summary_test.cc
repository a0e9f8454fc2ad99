#include "report/summary.h"
#include "report/check_summary.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/report/sample_report.h"

namespace tensorwire::report {
namespace {

using testing_support::sample_report;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Summary, SaysWhatRanWithTheSeed) {
  const std::string s = summary_text(sample_report());
  EXPECT_TRUE(contains(s, "sample (scenarios/sample.toml)")) << s;
  EXPECT_TRUE(contains(s, "seed 42")) << s;
  EXPECT_TRUE(contains(s, "payload mode")) << s;
  EXPECT_TRUE(contains(s, "2 ranks")) << s;
}

TEST(Summary, HasARowPerStepWithTimeInUnitsAndBytes) {
  const std::string s = summary_text(sample_report());
  EXPECT_TRUE(contains(s, "  step        time   tensors  tensor bytes    wire bytes\n")) << s;
  EXPECT_TRUE(contains(s, "     0     12.3 us         2      1.50 MiB      2.00 MiB\n")) << s;
  EXPECT_TRUE(contains(s, "     1     8.10 us         2      1.50 MiB      1.00 MiB\n")) << s;
  EXPECT_TRUE(contains(s, "step time min 8.10 us, mean 10.2 us, max 12.3 us")) << s;
}

TEST(Summary, AStepThatNeverFinishedHasNoWireBytes) {
  RunReport r = sample_report();
  r.step_wire_bytes.pop_back();
  const std::string s = summary_text(r);
  EXPECT_TRUE(contains(s, "     1     8.10 us         2      1.50 MiB             -\n")) << s;
}

TEST(Summary, AStepThatNeverFinishedIsLeftOutOfTheStepTimes) {
  RunReport three = sample_report();
  three.workload.steps.push_back(three.workload.steps.back());
  three.workload.steps.back().end_ns = 0;
  const std::string s = summary_text(three);
  EXPECT_TRUE(contains(s, "step time min 8.10 us, mean 10.2 us, max 12.3 us")) << s;
}

TEST(Summary, ARealBackendReportsWallTime) {
  RunReport r = sample_report();
  r.backend = "verbs";
  r.wall_time = true;
  const std::string s = summary_text(r);
  EXPECT_TRUE(contains(s, "wall time               1.23 ms (321 events)")) << s;
  EXPECT_FALSE(contains(s, "simulated time")) << s;
}

TEST(Summary, ShowsTheTotalsProtocolsAreComparedBy) {
  const std::string s = summary_text(sample_report());
  EXPECT_TRUE(contains(s, "bytes on the wire       3.00 MiB (3,145,728 B)")) << s;
  EXPECT_TRUE(contains(s, "control msgs / tensor   1.50 (6 over 4 tensors")) << s;
  EXPECT_TRUE(contains(s, "copied by the CPU       512 KiB (1 copy)")) << s;
  EXPECT_TRUE(contains(s, "copied by copy engines  3.00 MiB (3 copies)")) << s;
  EXPECT_TRUE(contains(s, "registrations           9 (4.00 MiB registered")) << s;
  EXPECT_TRUE(contains(s, "simulated time          1.23 ms (321 events)")) << s;
}

TEST(Summary, PassesWhenThereAreNoProblems) {
  const std::string s = summary_text(sample_report());
  EXPECT_TRUE(contains(s, "PASS")) << s;
  EXPECT_FALSE(contains(s, "FAIL")) << s;
}

TEST(Summary, TimingOnlyPassDoesNotClaimContentWasChecked) {
  RunReport r = sample_report();
  r.payload = false;
  const std::string s = summary_text(r);
  EXPECT_TRUE(contains(s, "timing-only mode")) << s;
  EXPECT_TRUE(contains(s, "content not checked")) << s;
}

TEST(Summary, FailListsEveryProblemUpToTheLimit) {
  RunReport r = sample_report();
  for (int i = 0; i < 5; ++i) r.problems.push_back(liveness_problem("problem number " + std::to_string(i)));
  SummaryOptions options;
  options.max_problems = 3;
  const std::string s = summary_text(r, options);
  EXPECT_TRUE(contains(s, "FAIL: 5 problems")) << s;
  EXPECT_FALSE(contains(s, "PASS")) << s;
  EXPECT_TRUE(contains(s, "  - liveness: problem number 0\n")) << s;
  EXPECT_TRUE(contains(s, "  - liveness: problem number 2\n")) << s;
  EXPECT_FALSE(contains(s, "problem number 3")) << s;
  EXPECT_TRUE(contains(s, "... and 2 more")) << s;
}

TEST(Summary, LongStepTablesKeepTheFirstAndLastRows) {
  RunReport r = sample_report();
  StepResult step = r.workload.steps[0];
  r.workload.steps.clear();
  for (uint64_t i = 0; i < 100; ++i) {
    step.step_id = i;
    r.workload.steps.push_back(step);
  }
  SummaryOptions options;
  options.max_step_rows = 10;
  const std::string s = summary_text(r, options);
  EXPECT_TRUE(contains(s, "\n     0     12.3 us")) << s;
  EXPECT_TRUE(contains(s, "\n     4     12.3 us")) << s;
  EXPECT_FALSE(contains(s, "\n     5     12.3 us")) << s;
  EXPECT_TRUE(contains(s, "90 steps not shown")) << s;
  EXPECT_TRUE(contains(s, "\n    95     12.3 us")) << s;
  EXPECT_TRUE(contains(s, "\n    99     12.3 us")) << s;
}

TEST(Summary, ARunWithNoStepsSaysSo) {
  RunReport r = sample_report();
  r.workload.steps.clear();
  EXPECT_TRUE(contains(summary_text(r), "no steps ran"));
}

// issue 18 #5: a check that found nothing says how far it looked: dfs whether
// it explored every order, random and pct how many schedules they ran.
TEST(CheckSummary, NothingFoundSaysWhetherTheSearchWasExhaustive) {
  model::CheckReport r;
  r.schedules = 1000;
  const std::string stopped = check_summary_text(r, /*dfs=*/true, false, "p", 1.0);
  EXPECT_TRUE(contains(stopped,
                       "outcome         nothing found (not exhaustive: stopped after 1,000 "
                       "schedules)\n"))
      << stopped;
  EXPECT_TRUE(contains(check_summary_text(r, /*dfs=*/false, false, "p", 1.0),
                       "outcome         nothing found in 1,000 schedules\n"));
  r.exhausted = true;
  const std::string every = check_summary_text(r, /*dfs=*/true, true, "p", 1.0);
  EXPECT_TRUE(contains(every, "(every order explored)\n")) << every;
  EXPECT_TRUE(contains(every, "outcome         nothing found\n")) << every;
  EXPECT_FALSE(contains(every, "not exhaustive")) << every;
}

}  // namespace
}  // namespace tensorwire::report
