#include "report/results_json.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/report/sample_report.h"

namespace tensorwire::report {
namespace {

using testing_support::sample_report;

TEST(ResultsJson, SaysWhatRan) {
  const auto j = results_json(sample_report());
  EXPECT_EQ(j.at("schema_version"), kResultsSchemaVersion);
  EXPECT_EQ(j.at("backend"), "sim");
  EXPECT_EQ(j.at("scenario").at("name"), "sample");
  EXPECT_EQ(j.at("scenario").at("path"), "scenarios/sample.toml");
  EXPECT_EQ(j.at("seed"), 42);
  EXPECT_EQ(j.at("mode"), "payload");
  EXPECT_EQ(j.at("ranks"), 2);
  EXPECT_EQ(j.at("end_ns"), 1'234'567);
  EXPECT_EQ(j.at("events"), 321);
  EXPECT_EQ(j.at("passed"), true);
  EXPECT_TRUE(j.at("problems").empty());
  EXPECT_EQ(j.at("workload").at("finished"), true);
  EXPECT_EQ(j.at("workload").at("steps"), 2);
  EXPECT_EQ(j.at("workload").at("tensors"), 4);
}

TEST(ResultsJson, TimingOnlyRunsSayTiming) {
  RunReport r = sample_report();
  r.payload = false;
  EXPECT_EQ(results_json(r).at("mode"), "timing");
}

TEST(ResultsJson, StepsCarryTimesTransfersAndBytes) {
  const auto steps = results_json(sample_report()).at("steps");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].at("step_id"), 1);
  EXPECT_EQ(steps[1].at("start_ns"), 500'000);
  EXPECT_EQ(steps[1].at("end_ns"), 508'100);
  EXPECT_EQ(steps[1].at("duration_ns"), 8'100);
  EXPECT_EQ(steps[1].at("transfers"), 2);
  EXPECT_EQ(steps[1].at("transfers_failed"), 0);
  EXPECT_EQ(steps[1].at("bytes"), (1 << 20) + (512 << 10));
  EXPECT_EQ(steps[0].at("wire_bytes"), 2 << 20);
  EXPECT_EQ(steps[1].at("wire_bytes"), 1 << 20);
  EXPECT_EQ(steps[1].at("max_recv_latency_ns"), 10'000);
}

TEST(ResultsJson, AStepThatNeverFinishedHasNullWireBytes) {
  RunReport r = sample_report();
  r.step_wire_bytes.pop_back();
  const auto steps = results_json(r).at("steps");
  EXPECT_EQ(steps[0].at("wire_bytes"), 2 << 20);
  EXPECT_TRUE(steps[1].at("wire_bytes").is_null());
  EXPECT_EQ(steps[0].at("finished"), true);
  EXPECT_EQ(steps[1].at("finished"), false);
}

TEST(ResultsJson, StepsCarryEachTensorsTimes) {
  const auto tensors = results_json(sample_report()).at("steps")[1].at("per_tensor");
  ASSERT_EQ(tensors.size(), 2u);
  const auto& bias = tensors[1];
  EXPECT_EQ(bias.at("phase"), "tensors");
  EXPECT_EQ(bias.at("name"), "bias");
  EXPECT_EQ(bias.at("src"), 1);
  EXPECT_EQ(bias.at("dst"), 0);
  EXPECT_EQ(bias.at("bytes"), 512 << 10);
  EXPECT_EQ(bias.at("recv_called_ns"), 500'000);
  EXPECT_EQ(bias.at("done_ns"), 504'000);
  EXPECT_EQ(bias.at("latency_ns"), 4'000);
  EXPECT_EQ(bias.at("failed"), false);
}

TEST(ResultsJson, ARecvThatNeverCompletedHasNullTimes) {
  RunReport r = sample_report();
  r.workload.steps[1].transfers[0].done = false;
  const auto weights = results_json(r).at("steps")[1].at("per_tensor")[0];
  EXPECT_TRUE(weights.at("done_ns").is_null());
  EXPECT_TRUE(weights.at("latency_ns").is_null());
}

TEST(ResultsJson, TheSimulatorWritesNoMeasuredTimes) {
  const auto steps = results_json(sample_report()).at("steps");
  for (const auto& step : steps) {
    EXPECT_FALSE(step.contains("measured_ns"));
    for (const auto& tensor : step.at("per_tensor")) EXPECT_FALSE(tensor.contains("measured_ns"));
  }
}

TEST(ResultsJson, MeasuredWallTimesAreWrittenWhereSet) {
  MeasuredWallTimes measured;
  measured.step_ns = {std::nullopt, 9'000};  // step 0 not measured
  measured.transfer_ns = {{}, {11'000}};     // only step 1's first Recv
  const auto steps = results_json(sample_report(), measured).at("steps");
  EXPECT_FALSE(steps[0].contains("measured_ns"));
  EXPECT_EQ(steps[1].at("measured_ns"), 9'000);
  EXPECT_EQ(steps[1].at("duration_ns"), 8'100);  // the backend's time is kept beside it
  EXPECT_FALSE(steps[0].at("per_tensor")[0].contains("measured_ns"));
  EXPECT_EQ(steps[1].at("per_tensor")[0].at("measured_ns"), 11'000);
  EXPECT_FALSE(steps[1].at("per_tensor")[1].contains("measured_ns"));
}

TEST(ResultsJson, FailedTransfersAndProblemsAreReported) {
  RunReport r = sample_report();
  r.workload.steps[0].transfers[1].status = Status(StatusCode::kAborted, "step aborted");
  r.workload.steps[1].transfers[0].mismatch = "byte 7 differs";
  r.problems = {transport_problem("step 0 'bias' 1->0: recv failed", 0, 1),
                safety_problem("step 1 'weights' 0->1: byte 7 differs", 1)};
  const auto j = results_json(r);
  EXPECT_EQ(j.at("passed"), false);
  ASSERT_EQ(j.at("problems").size(), 2u);
  // Typed: the kind decides, the rank (and the peer, where there is one) say where.
  EXPECT_EQ(j.at("problems")[0].at("kind"), "transport");
  EXPECT_EQ(j.at("problems")[0].at("rank"), 0);
  EXPECT_EQ(j.at("problems")[0].at("peer"), 1);
  EXPECT_EQ(j.at("problems")[1].at("kind"), "safety");
  EXPECT_EQ(j.at("problems")[1].at("rank"), 1);
  EXPECT_FALSE(j.at("problems")[1].contains("peer"));
  EXPECT_EQ(j.at("problems")[1].at("text"), "step 1 'weights' 0->1: byte 7 differs");
  EXPECT_EQ(j.at("steps")[0].at("transfers_failed"), 1);
  EXPECT_EQ(j.at("steps")[1].at("transfers_failed"), 1);
}

TEST(ResultsJson, TransportTotalsComeFromTheBackendCounters) {
  const auto t = results_json(sample_report()).at("transport");
  EXPECT_EQ(t.at("bytes_on_wire"), 3 << 20);
  EXPECT_EQ(t.at("sends"), 6);
  EXPECT_EQ(t.at("rdma_writes_with_imm"), 4);
  EXPECT_EQ(t.at("rdma_writes"), 0);
  EXPECT_EQ(t.at("rdma_reads"), 0);
  EXPECT_EQ(t.at("registrations"), 9);
  EXPECT_EQ(t.at("registered_bytes"), 4 << 20);
  EXPECT_EQ(t.at("cpu_copy_bytes"), 512 << 10);
  EXPECT_EQ(t.at("cpu_copies"), 1);
  EXPECT_EQ(t.at("copy_engine_bytes"), 3 << 20);
  EXPECT_EQ(t.at("copy_engine_copies"), 3);
  EXPECT_TRUE(t.contains("rnr_retries"));
  EXPECT_TRUE(t.contains("completions_error"));
}

TEST(ResultsJson, ProtocolTotalsCountControlMessagesPerTensor) {
  const auto p = results_json(sample_report()).at("protocol");
  EXPECT_EQ(p.at("tensor_requests"), 4);
  EXPECT_EQ(p.at("meta_data_updates"), 1);
  EXPECT_EQ(p.at("re_requests"), 1);
  EXPECT_EQ(p.at("error_statuses"), 0);
  EXPECT_EQ(p.at("control_messages"), 6);
  EXPECT_DOUBLE_EQ(p.at("control_messages_per_tensor").get<double>(), 1.5);
  EXPECT_EQ(p.at("content_writes"), 4);
}

TEST(ResultsJson, NoTensorsMeansZeroControlMessagesPerTensorNotADivisionByZero) {
  RunReport r = sample_report();
  r.workload.steps.clear();
  EXPECT_EQ(control_messages_per_tensor(r), 0.0);
  EXPECT_EQ(results_json(r).at("protocol").at("control_messages_per_tensor"), 0.0);
}

TEST(ResultsJson, PerRankStatsKeepEachRanksCounters) {
  const auto ranks = results_json(sample_report()).at("per_rank");
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].at("rank"), 0);
  EXPECT_EQ(ranks[0].at("transport").at("bytes_on_wire"), 2 << 20);
  EXPECT_EQ(ranks[0].at("protocol").at("meta_data_updates"), 1);
  EXPECT_EQ(ranks[1].at("rank"), 1);
  EXPECT_EQ(ranks[1].at("transport").at("copy_engine_copies"), 3);
  EXPECT_EQ(ranks[1].at("protocol").at("re_requests"), 1);
  EXPECT_EQ(ranks[1].at("protocol").at("control_messages"), 3);
}

TEST(ResultsJson, TextIsStableAndKeepsFieldOrder) {
  const std::string a = results_json_text(sample_report());
  const std::string b = results_json_text(sample_report());
  EXPECT_EQ(a, b);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.back(), '\n');
  // Fields in schema order: what ran first, the details after.
  EXPECT_LT(a.find("\"schema_version\""), a.find("\"backend\""));
  EXPECT_LT(a.find("\"passed\""), a.find("\"steps\""));
  EXPECT_LT(a.find("\"steps\""), a.find("\"per_rank\""));
}

TEST(ResultsJson, TextHoldsTheDocumentWithEachTensorRecordOnOneLine) {
  const RunReport r = sample_report();
  const std::string text = results_json_text(r);
  EXPECT_EQ(nlohmann::ordered_json::parse(text), results_json(r));
  // The top levels a member per line; a step's per-tensor records one per line.
  EXPECT_NE(text.find("\n  \"schema_version\": 1,\n"), std::string::npos);
  const auto parsed = nlohmann::ordered_json::parse(text);
  const auto& records = parsed.at("steps").at(0).at("per_tensor");
  ASSERT_FALSE(records.empty());
  for (const auto& record : records) {
    const std::string line = "\n        " + record.dump();
    const size_t at = text.find(line);
    ASSERT_NE(at, std::string::npos) << record.dump();
    const char after = text[at + line.size()];
    EXPECT_TRUE(after == ',' || after == '\n') << record.dump();
  }
}

TEST(ResultsJson, InvalidUtf8InAProblemIsReplacedNotThrown) {
  RunReport r = sample_report();
  r.problems = {safety_problem(std::string("tensor '\xff\xfe' failed"))};
  std::string text;
  ASSERT_NO_THROW(text = results_json_text(r));
  const auto parsed = nlohmann::json::parse(text);
  EXPECT_EQ(parsed.at("passed"), false);
}

}  // namespace
}  // namespace tensorwire::report
