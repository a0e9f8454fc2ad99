// `tensorwire sweep` and `tensorwire plot`: the grid's axes and ranges, the
// table made from results, and the command as a user runs it (every point run,
// finished points reused, plots drawn, bad input named).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/tensorwire/sweep_axes.h"
#include "apps/tensorwire/sweep_table.h"
#include "tests/apps/cli_fixture.h"

namespace tensorwire::app {
namespace {

using nlohmann::json;
using testing::CliRun;
using testing::contains;
using testing::quoted;
using testing::read_file;
namespace fs = std::filesystem;

std::vector<std::string> values_of(const std::string& flag) {
  Result<SweepAxis> axis = parse_sweep_axis(flag);
  EXPECT_TRUE(axis.is_ok()) << axis.status().message();
  return axis ? axis->values : std::vector<std::string>{};
}

std::string error_of(const std::string& flag) {
  Result<SweepAxis> axis = parse_sweep_axis(flag);
  return axis ? "(parsed)" : axis.status().message();
}

TEST(SweepAxes, ListsAndRangesExpandInOrder) {
  using V = std::vector<std::string>;
  EXPECT_EQ(values_of("protocol.name=a,b"), (V{"a", "b"}));
  EXPECT_EQ(values_of("k=1KiB..64KiB:x4"), (V{"1KiB", "4KiB", "16KiB", "64KiB"}));
  EXPECT_EQ(values_of("k=1KiB..1MiB:x32"), (V{"1KiB", "32KiB", "1MiB"}));
  EXPECT_EQ(values_of("k=1000..3000:+1000"), (V{"1000", "2000", "3000"}));
  EXPECT_EQ(values_of("k=1..8:x2,100"), (V{"1", "2", "4", "8", "100"}));
  EXPECT_EQ(values_of("k=25Gbps..200Gbps:x2"), (V{"25Gbps", "50Gbps", "100Gbps", "200Gbps"}));
  EXPECT_EQ(values_of("k=0.5us..2us:+0.5"), (V{"0.5us", "1us", "1.5us", "2us"}));
  EXPECT_EQ(values_of("k=1000B..3KB:+1000"), (V{"1000", "2000", "3000"}));
  EXPECT_EQ(values_of("k=[1, 2],[3]"), (V{"[1, 2]", "[3]"}));
  EXPECT_EQ(values_of("k=\"a,b\",c"), (V{"\"a,b\"", "c"}));
}

TEST(SweepAxes, BadRangesSayWhatIsWrong) {
  EXPECT_TRUE(contains(error_of("k=1..8"), "needs a step")) << error_of("k=1..8");
  EXPECT_TRUE(contains(error_of("k=1..8:x1"), "factor must be above 1"));
  EXPECT_TRUE(contains(error_of("k=1..8:+0"), "step must be above 0"));
  EXPECT_TRUE(contains(error_of("k=8..1:x2"), "end is below the start"));
  EXPECT_TRUE(contains(error_of("k=1us..8Gbps:x2"), "neither sizes nor numbers with the same unit"));
  EXPECT_TRUE(contains(error_of("k=1..8:y2"), "xF (times F) or +S (plus S)"));
  EXPECT_TRUE(contains(error_of("k=1..100000:+1"), "more than 1000 values"));
  EXPECT_TRUE(contains(error_of("k=a,,b"), "an empty value"));
  EXPECT_TRUE(contains(error_of("nokey"), "is not KEY=VALUE"));
}

TEST(SweepAxes, TheGridIsNestedLoopsLastAxisFastest) {
  const std::vector<SweepAxis> axes = {{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}};
  ASSERT_EQ(sweep_point_count(axes).value(), 6u);
  const std::vector<ScenarioOverride> p4 = sweep_point(axes, 4);
  EXPECT_EQ(p4[0].value, "2");
  EXPECT_EQ(p4[1].value, "y");
  EXPECT_FALSE(sweep_point_count({{"a", {"1"}}, {"a", {"2"}}}).is_ok());
  const std::vector<SweepAxis> huge = {{"a", std::vector<std::string>(1000, "1")},
                                       {"b", std::vector<std::string>(11, "1")}};
  EXPECT_FALSE(sweep_point_count(huge).is_ok());
}

TEST(SweepTable, RowsCarryStepFiguresAndEveryCounter) {
  const json results = json::parse(R"({
    "schema_version": 1, "backend": "sim", "passed": true, "end_ns": 900,
    "scenario": {"name": "s"}, "coverage": {"states": {"reached": 1}},
    "steps": [{"duration_ns": 500, "bytes": 1000,
               "per_tensor": [{"breakdown": {"wire_ns": 999, "control_messages": 9}}]},
              {"duration_ns": 100, "bytes": 1000,
               "per_tensor": [{"breakdown": {"wire_ns": 60, "control_ns": 40, "control_messages": 1}}]},
              {"duration_ns": 300, "bytes": 1000,
               "per_tensor": [{"breakdown": {"wire_ns": 200, "other_ns": 100, "control_messages": 2}}]}],
    "transport": {"bytes_on_wire": 3100, "rdma_reads": 0},
    "resources": [{"name": "node0/nic tx", "kind": "nic send", "busy_ns": 600},
                  {"name": "node1/nic tx", "kind": "nic send", "busy_ns": 300},
                  {"name": "node0/copy0", "kind": "copy engine", "busy_ns": 90}]})");
  const SweepRow row = sweep_row(7, {{"k", "1KiB"}}, results);
  json cells = json::object();
  for (const auto& [name, value] : row.cells) cells[name] = value;
  EXPECT_EQ(cells["point"], 7);
  EXPECT_EQ(cells["k"], "1KiB");
  EXPECT_EQ(cells["step_time_ns"], 300);    // median of 500, 100, 300
  EXPECT_EQ(cells["first_step_ns"], 500);
  EXPECT_EQ(cells["steady_step_ns"], 100);  // lower median of 100, 300
  EXPECT_DOUBLE_EQ(cells["bandwidth_gbps"].get<double>(), 1000.0 * 8 / 100);
  EXPECT_EQ(cells["transport.bytes_on_wire"], 3100);
  EXPECT_EQ(cells["backend"], "sim");
  EXPECT_EQ(cells["busy_per_step.nic_send_ns"], 300);  // (600 + 300) / 3 steps
  EXPECT_EQ(cells["busy_per_step.copy_engine_ns"], 30);
  // The mean per transfer of the steps after the first: (60 + 200) / 2, ...
  EXPECT_DOUBLE_EQ(cells["breakdown.wire_ns"].get<double>(), 130.0);
  EXPECT_DOUBLE_EQ(cells["breakdown.control_ns"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(cells["breakdown.other_ns"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(cells["breakdown.control_messages"].get<double>(), 1.5);
  EXPECT_FALSE(cells.contains("coverage.states.reached"));
  EXPECT_FALSE(cells.contains("schema_version"));
  const std::string csv = sweep_csv({row, sweep_row(8, {{"k", "a,b"}}, json::object())});
  EXPECT_TRUE(contains(csv, "point,k,step_time_ns,")) << csv;
  EXPECT_TRUE(contains(csv, "\n8,\"a,b\",,")) << csv;  // quoted, then empty cells
}

class SweepCli : public testing::CliFixture {};

TEST_F(SweepCli, RunsEveryPointWritesTheTableAndPlotsAndReusesFinishedPoints) {
  const std::string scenario = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/pingpong.toml";
  const std::string args = "sweep " + quoted(scenario) + " --out " + quoted(path("s").string()) +
                           " --timing-only --jobs 2 --set protocol.name=tf_verbs_zero_copy,"
                           "oneflow_commnet --set 'workload.tensor[0].bytes=1KiB..64KiB:x8'";
  CliRun r = run(args + " --plot");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(contains(r.out, "6 of 6 points (0 reused)")) << r.out;
  const std::string csv = read_file(path("s/sweep.csv"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7) << csv;  // header + 6 points
  for (const char* cell : {"\n0,tf_verbs_zero_copy,1KiB,", "\n5,oneflow_commnet,64KiB,"}) {
    EXPECT_TRUE(contains(csv, cell)) << cell << " missing from\n" << csv;
  }
  const json table = json::parse(read_file(path("s/sweep.json")));
  ASSERT_EQ(table["rows"].size(), 6u);
  EXPECT_GT(table["rows"][2]["steady_step_ns"].get<int64_t>(),
            table["rows"][0]["steady_step_ns"].get<int64_t>());  // 64 KiB takes longer than 1 KiB
  for (const char* plot : {"latency.png", "latency.svg", "bandwidth.png", "bandwidth.svg",
                           "breakdown.png", "breakdown.svg", "transfer_breakdown.png",
                           "transfer_breakdown.svg"}) {
    EXPECT_GT(fs::file_size(path("s") / plot), 1000u) << plot;
  }
  r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "6 of 6 points (6 reused)")) << r.out;
  EXPECT_EQ(read_file(path("s/sweep.csv")), csv);
}

TEST_F(SweepCli, BadInputIsNamedBeforeAnythingRuns) {
  const std::string scenario = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/pingpong.toml";
  const std::string out = " --out " + quoted(path("s").string());
  CliRun r = run("sweep " + quoted(scenario) + out + " --set 'workload.tensor[0].bytes=1KiB,3,x'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "point 2 (workload.tensor[0].bytes=x): --set workload.tensor[0]"))
      << r.err;
  EXPECT_FALSE(fs::exists(path("s")));
  r = run("sweep " + quoted(scenario) + out + " --set cluster.nodes=2..4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "needs a step")) << r.err;
  r = run("sweep " + quoted(scenario) + out + " --jobs 0 --set cluster.nodes=2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--jobs must be a whole number")) << r.err;
  r = run("plot " + quoted(path("none.csv").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "does not exist")) << r.err;
}

TEST_F(SweepCli, ShardsFillThePointsAndAnUnshardedSweepReusesThemAll) {
  const std::string scenario = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/pingpong.toml";
  const std::string grid = " --timing-only --set 'workload.tensor[0].bytes=1KiB..16KiB:x2'";
  for (int shard = 0; shard < 3; ++shard) {
    const CliRun r = run("sweep " + quoted(scenario) + " --out " + quoted(path("s").string()) +
                         grid + " --shard " + std::to_string(shard) + "/3");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, shard == 0 ? "2 of 5 points" : shard == 1 ? "2 of 5" : "1 of 5"))
        << r.out;
  }
  EXPECT_FALSE(fs::exists(path("s/sweep.csv")));  // a shard writes no table
  CliRun r = run("sweep " + quoted(scenario) + " --out " + quoted(path("s").string()) + grid);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "5 of 5 points (5 reused)")) << r.out;
  r = run("sweep " + quoted(scenario) + " --out " + quoted(path("one").string()) + grid);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(path("s/sweep.csv")), read_file(path("one/sweep.csv")));
  r = run("sweep " + quoted(scenario) + " --out " + quoted(path("x").string()) + grid +
          " --shard 3/3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--shard: '3/3' is not I/N")) << r.err;
}

}  // namespace
}  // namespace tensorwire::app
