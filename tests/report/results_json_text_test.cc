// results_json_text writes a run's steps and ranks straight from the report,
// without the tree results_json builds. Both must give the same document: here
// the text is checked, byte for byte, against the tree laid out as the results
// file was written before (the reference layout below), on reports that
// exercise every branch of a record (failed and never-finished Recvs,
// measured wall times, breakdowns, problems, names that need escaping or are
// not UTF-8, ranks without counters, collective runs, real simulated runs).
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/protocols/protocol_registry.h"
#include "core/trace_sink.h"
#include "report/results_json.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"
#include "tests/report/sample_report.h"

namespace tensorwire::report {
namespace {

using Json = nlohmann::ordered_json;
using testing_support::sample_report;

constexpr auto kReplace = nlohmann::json::error_handler_t::replace;

// The results file's layout as it was written from the tree alone: objects
// and arrays above depth 4 a member per line, deeper ones on one line.
void reference_layout(std::string& out, const Json& j, int depth) {
  if (depth >= 4 || !j.is_structured() || j.empty()) {
    out += j.dump(-1, ' ', false, kReplace);
    return;
  }
  const bool object = j.is_object();
  out += object ? '{' : '[';
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out += first ? "\n" : ",\n";
    first = false;
    out.append(2 * static_cast<size_t>(depth + 1), ' ');
    if (object) out += Json(it.key()).dump(-1, ' ', false, kReplace) + ": ";
    reference_layout(out, *it, depth + 1);
  }
  out += '\n';
  out.append(2 * static_cast<size_t>(depth), ' ');
  out += object ? '}' : ']';
}

std::string reference_text(const RunReport& r, const MeasuredWallTimes& measured = {}) {
  std::string out;
  reference_layout(out, results_json(r, measured), 0);
  return out + '\n';
}

// The text equals the tree's reference layout, and parses back to the tree
// (to the tree with its invalid UTF-8 replaced, where it had some).
void expect_text_is_the_tree(const RunReport& r, const MeasuredWallTimes& measured = {}) {
  const std::string text = results_json_text(r, measured);
  EXPECT_EQ(text, reference_text(r, measured));
  const Json tree = results_json(r, measured);
  EXPECT_EQ(Json::parse(text), Json::parse(tree.dump(-1, ' ', false, kReplace)));
}

TEST(ResultsJsonText, SampleReportIsTheTreesText) {
  const RunReport r = sample_report();
  expect_text_is_the_tree(r);
  EXPECT_EQ(Json::parse(results_json_text(r)), results_json(r));
}

TEST(ResultsJsonText, AnEmptyReportIsTheTreesText) {
  RunReport r;
  expect_text_is_the_tree(r);
  EXPECT_EQ(Json::parse(results_json_text(r)).at("steps"), Json::array());
  EXPECT_EQ(Json::parse(results_json_text(r)).at("per_rank"), Json::array());
}

// Step 0 finished with a Recv that errored, one whose content was wrong and
// one with a breakdown; step 1 never finished: a Recv never done, and an
// empty step after it.
RunReport report_with_failures() {
  RunReport r = sample_report();
  StepResult& done = r.workload.steps[0];
  done.transfers[0].status = Status(StatusCode::kQpError, "lost");
  done.transfers[1].mismatch = "byte 3 differs";
  TransferResult broken = done.transfers[1];
  broken.mismatch.clear();
  broken.breakdown = TransferBreakdown{7, 100, -2, 300, 0, INT64_MAX};
  done.transfers.push_back(broken);
  StepResult& unfinished = r.workload.steps[1];
  unfinished.transfers[1].done = false;
  unfinished.transfers[1].done_ns = 0;
  r.workload.steps.push_back(StepResult{.step_id = 2, .start_ns = -5, .end_ns = 0, .transfers = {}});
  r.step_wire_bytes = {UINT64_MAX};
  r.workload.finished = false;
  r.workload.recvs_failed = 1;
  r.problems = {safety_problem("bytes \"differ\"", 1), liveness_problem("stuck"),
                transport_problem("qp error", 0, 1)};
  return r;
}

TEST(ResultsJsonText, FailedAndUnfinishedRecvsAreTheTreesText) {
  const RunReport r = report_with_failures();
  expect_text_is_the_tree(r);
  const Json steps = Json::parse(results_json_text(r)).at("steps");
  EXPECT_TRUE(steps[1].at("per_tensor")[1].at("done_ns").is_null());
  EXPECT_TRUE(steps[1].at("wire_bytes").is_null());
  EXPECT_EQ(steps[0].at("per_tensor")[2].at("breakdown").at("other_ns"), INT64_MAX);
  EXPECT_EQ(steps[2].at("per_tensor"), Json::array());
}

TEST(ResultsJsonText, MeasuredWallTimesAreTheTreesText) {
  const RunReport r = report_with_failures();
  MeasuredWallTimes measured;
  measured.step_ns = {std::nullopt, 42};  // step 2 past the end: not measured
  measured.transfer_ns = {{11, std::nullopt, 13}, {21}};
  expect_text_is_the_tree(r, measured);
  const Json steps = Json::parse(results_json_text(r, measured)).at("steps");
  EXPECT_EQ(steps[1].at("measured_ns"), 42);
  EXPECT_EQ(steps[0].at("per_tensor")[2].at("measured_ns"), 13);
  EXPECT_FALSE(steps[0].at("per_tensor")[1].contains("measured_ns"));
}

// Quotes, backslashes, control characters and DEL; valid UTF-8; and bytes that
// are not UTF-8 (a stray continuation, a cut sequence, an overlong NUL, a
// surrogate), which both texts replace.
TEST(ResultsJsonText, NamesThatNeedEscapingAreTheTreesText) {
  RunReport r = report_with_failures();
  r.scenario_name = "odd \xff name";
  std::vector<TransferResult>& t = r.workload.steps[0].transfers;
  t[0].name = "a \"quoted\" \\ name\twith\ncontrols \x01\x1f\x7f";
  t[0].phase = "caf\xc3\xa9 \xf0\x9f\x98\x80";
  t[1].name = "stray \x80 cut \xc3";
  t[1].phase = "overlong \xc0\x80 surrogate \xed\xa0\x80";
  t[2].name = "only \"quotes\" and \\";
  t[2].phase = "del \x7f";
  r.workload.steps[1].transfers[0].name = "";
  expect_text_is_the_tree(r);
  const Json parsed = Json::parse(results_json_text(r));
  EXPECT_EQ(parsed.at("steps")[0].at("per_tensor")[0].at("name"), t[0].name);
}

// Records are gathered in a buffer of 512 bytes (json_text::BufferedText):
// names that fill it to the byte, overrun it or are longer than it, verbatim
// or escaped, and records enough to fill it many times over.
TEST(ResultsJsonText, NamesLongerThanTheRecordBufferAreTheTreesText) {
  RunReport r = report_with_failures();
  std::vector<TransferResult>& t = r.workload.steps[0].transfers;
  t[0].name = std::string(510, 'n');
  t[0].phase = std::string(511, 'p');
  t[1].name = std::string(1500, 'x') + "\"";
  t[1].phase = std::string(300, 'q');
  t[2].name = std::string(490, 'y');
  std::vector<TransferResult>& more = r.workload.steps[1].transfers;
  for (size_t i = 0; i < 100; ++i) {
    TransferResult extra = more[0];
    extra.name = std::string(i * 7 % 530, static_cast<char>('a' + i % 26));
    extra.bytes = UINT64_MAX - i;
    more.push_back(extra);
  }
  expect_text_is_the_tree(r);
}

// Counter names repeated (a JSON key keeps its first place, its last value),
// one named like the total, one that needs escaping; more ranks with
// transport stats than with counters, and the other way round.
TEST(ResultsJsonText, RanksWithOddCountersAreTheTreesText) {
  RunReport r = sample_report();
  using R = CounterRole;
  r.protocol_counters[0].push_back({"tensor_requests", R::kControlMessage, 99});
  r.protocol_counters[0].push_back({"control_messages", R::kOther, 5});
  r.protocol_counters[1].push_back({"we\"ird\xff", R::kControlMessage, 1});
  r.protocol_counters[1].push_back({"back\\slash", R::kOther, 2});
  r.rank_stats.push_back(r.rank_stats[0]);
  expect_text_is_the_tree(r);
  r.rank_stats.clear();
  expect_text_is_the_tree(r);
  r.protocol_counters.push_back({});
  expect_text_is_the_tree(r);
  EXPECT_EQ(Json::parse(results_json_text(r)).at("per_rank")[0].at("transport"), Json::object());
}

TEST(ResultsJsonText, WallTimeJitterAndResourcesAreTheTreesText) {
  RunReport r = sample_report();
  r.wall_time = true;
  r.jitter = "lognormal \"sigma\" 0.1";
  r.resources = {{"node0/nic tx", ResourceKind::kNicSend, 0, 1'000'001, 5},
                 {"node1/nic rx", ResourceKind::kNicReceive, 1, 0, 0},
                 {"rank 0/cpu", ResourceKind::kCpu, 0, 333, 0}};
  r.step_resources = r.resources;
  r.coverage.declare("states", "idle");
  r.coverage.count("states", "idle", 3);
  expect_text_is_the_tree(r);
  r.end_ns = 3;  // utilisations of 1/3 and more than 1
  r.resources.push_back({"rank \"1\"/cpu\xfe", ResourceKind::kCpu, 1, 1, 0});
  expect_text_is_the_tree(r);
  r.end_ns = 0;  // a run of no time: utilisation 0.0
  expect_text_is_the_tree(r);
  EXPECT_EQ(Json::parse(results_json_text(r)).at("resources")[0].at("utilisation"), 0.0);
  for (ResourceUsage& u : r.resources) u.busy_ns = 0;  // none busy: []
  expect_text_is_the_tree(r);
  EXPECT_EQ(Json::parse(results_json_text(r)).at("resources"), Json::array());
}

// A collective's own keys come from its account, laid out from the tree,
// whatever they are called ("steps" too); per_rank is still written directly.
class FakeAccount : public CollectiveAccount {
 public:
  std::string summary_section() const override { return "fake\n"; }
  std::string pass_line(bool) const override { return "PASS\n"; }
  void add_results(Json& results, std::string_view kind) const override {
    results["workload"] = {{"kind", kind}, {"finished", true}};
    results["steps"] = Json::array({Json{{"a", 1.5}}, Json::array({1, Json::object()})});
    results["per_rank"] = "overwritten by the counters";
    results["ratio"] = 1e-7;
    results["resources"] = "overwritten where the run measured resources";
    results["deep"] = {{"x", {{"y", {{"z", {{"w", {1, 2}}}}}}}}};
  }
  std::string graph_dot(std::string_view) const override { return ""; }
};

std::string a_collective_protocol() {
  for (const ProtocolDescriptor* p : registered_protocols()) {
    if (p->shape() == ProtocolShape::kCollective) return std::string(p->name());
  }
  return "";
}

TEST(ResultsJsonText, CollectiveRunsAreTheTreesText) {
  RunReport r = sample_report();
  r.protocol = a_collective_protocol();
  ASSERT_FALSE(r.protocol.empty()) << "no collective protocol is registered";
  ASSERT_TRUE(r.collective_run());
  expect_text_is_the_tree(r);  // one that could not plan: no account
  r.collective = std::make_shared<FakeAccount>();
  expect_text_is_the_tree(r);
  EXPECT_TRUE(Json::parse(results_json_text(r)).at("resources").is_string());
  r.resources = {{"node0/nic tx", ResourceKind::kNicSend, 0, 7, 8}};
  expect_text_is_the_tree(r);
  EXPECT_TRUE(Json::parse(results_json_text(r)).at("resources").is_array());
  const Json parsed = Json::parse(results_json_text(r));
  EXPECT_EQ(parsed.at("steps")[0].at("a"), 1.5);
  EXPECT_TRUE(parsed.at("per_rank").is_array());
}

RunReport run_text(const std::string& text) {
  const Scenario scenario = load_scenario_string(text, "t.toml", "");
  SimulationOptions options;
  NullTraceSink trace;
  return run_simulation(scenario, options, trace);
}

TEST(ResultsJsonText, SimulatedRunsAreTheTreesText) {
  const std::string tensors =
      "[workload]\nkind = \"tensors\"\nsteps = 3\n"
      "[[workload.tensor]]\nname = \"w\"\nsrc = 0\ndst = 1\ndtype = \"uint8\"\nshape = [4096]\n"
      "[[workload.tensor]]\nname = \"b\"\nsrc = 2\ndst = 0\ndtype = \"float32\"\nshape = [64]\n";
  const RunReport r = run_text("name = \"three\"\n[cluster]\nnodes = 3\n" + tensors);
  ASSERT_FALSE(r.workload.steps.empty());
  expect_text_is_the_tree(r);
  const RunReport timing =
      run_text("name = \"t\"\n[run]\nmode = \"timing\"\n[cluster]\nnodes = 3\n"
               "[cluster.jitter]\nmessage_latency = { distribution = \"lognormal\", "
               "median = \"2us\", sigma = 1.0 }\n" + tensors);
  ASSERT_FALSE(timing.jitter.empty());
  expect_text_is_the_tree(timing);
}

}  // namespace
}  // namespace tensorwire::report
