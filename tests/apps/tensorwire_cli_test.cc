// Runs the built `tensorwire` binary as a user would and checks what it prints,
// the files it writes and its exit status.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/protocols/protocol_registry.h"
#include "report/content_hash.h"
#include "tests/apps/cli_fixture.h"
#include "tests/report/trace_nesting.h"

namespace {

using tensorwire::testing::CliRun;
using tensorwire::testing::contains;
using tensorwire::testing::kCli;
using tensorwire::testing::kQuickstart;
using tensorwire::testing::quoted;
using tensorwire::testing::read_file;
using TensorwireCli = tensorwire::testing::CliFixture;
namespace fs = std::filesystem;


TEST_F(TensorwireCli, HelpExitsZeroAndNamesTheRunCommand) {
  const CliRun r = run("--help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "run")) << r.out;
  EXPECT_TRUE(contains(r.out, "Exit codes")) << r.out;
}

TEST_F(TensorwireCli, RunHelpListsEveryOption) {
  const CliRun r = run("run --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* option : {"SCENARIO", "--seed", "--trace", "--json", "--timing-only"}) {
    EXPECT_TRUE(contains(r.out, option)) << option << " missing from:\n" << r.out;
  }
}

TEST_F(TensorwireCli, VersionExitsZero) {
  const CliRun r = run("--version");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "tensorwire")) << r.out;
}

TEST_F(TensorwireCli, NoCommandIsBadInput) {
  const CliRun r = run("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(r.err.empty());
}

TEST_F(TensorwireCli, UnknownFlagIsBadInputNamingTheFlag) {
  const CliRun r = run("run --no-such-flag");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--no-such-flag")) << r.err;
}

TEST_F(TensorwireCli, ASeedThatIsNotANumberIsBadInput) {
  EXPECT_EQ(run("run --seed banana " + quoted(kQuickstart)).exit_code, 2);
  EXPECT_EQ(run("run --seed -3 " + quoted(kQuickstart)).exit_code, 2);
  EXPECT_EQ(run("run --seed 99999999999999999999999 " + quoted(kQuickstart)).exit_code, 2);
}

TEST_F(TensorwireCli, MissingScenarioFileIsBadInputNamingThePath) {
  const std::string missing = path("no_such_scenario.toml").string();
  const CliRun r = run("run " + quoted(missing));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, missing)) << r.err;
  EXPECT_FALSE(contains(r.out, "PASS")) << "the run must not start";
}

TEST_F(TensorwireCli, ADirectoryIsNotAScenario) {
  const CliRun r = run("run " + quoted(dir_.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, dir_.string())) << r.err;
}

TEST_F(TensorwireCli, MalformedScenarioIsBadInputWithFileAndLine) {
  const fs::path bad = path("bad.toml");
  std::ofstream(bad) << "name = \"bad\"\n[cluster]\nnodes = = 2\n";
  const CliRun r = run("run " + quoted(bad.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, bad.string() + ":3:")) << r.err;
  EXPECT_FALSE(contains(r.out, "PASS"));
}

TEST_F(TensorwireCli, AWrongValueInAScenarioIsBadInputNamingFileLineAndKey) {
  // The quickstart with one value of the wrong type: the error names where and what.
  std::string text = read_file(kQuickstart);
  const std::string good = "\nnodes = 2\n";
  const size_t at = text.find(good);
  ASSERT_NE(at, std::string::npos) << "quickstart.toml changed; update this test";
  const size_t line = 2 + static_cast<size_t>(std::count(text.begin(), text.begin() + at, '\n'));
  text.replace(at, good.size(), "\nnodes = \"two\"\n");
  const fs::path bad = path("wrong_type.toml");
  std::ofstream(bad) << text;
  const CliRun r = run("run " + quoted(bad.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, bad.string() + ":" + std::to_string(line) + ":")) << r.err;
  EXPECT_TRUE(contains(r.err, "nodes")) << r.err;
  EXPECT_FALSE(contains(r.out, "PASS"));
}

TEST_F(TensorwireCli, UnwritableOutputFileIsBadInputNamingThePath) {
  // A parent "directory" that is a regular file cannot be created.
  std::ofstream(path("plain")) << "x";
  const std::string unwritable = path("plain/sub/results.json").string();
  const CliRun r = run("run " + quoted(kQuickstart) + " --json " + quoted(unwritable));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, unwritable)) << r.err;
  EXPECT_TRUE(contains(r.err, "--json")) << r.err;
  EXPECT_TRUE(contains(r.err, "'" + path("plain").string() + "' is not a directory")) << r.err;
  EXPECT_FALSE(contains(r.out, "PASS")) << "reported before the run, not after";
  EXPECT_EQ(read_file(path("plain")), "x");
}

TEST_F(TensorwireCli, OutputsIntoMissingDirectoriesCreateThem) {
  const CliRun r = run("run " + quoted(kQuickstart) + " --json out/sub/r.json --trace out/t.json",
                       dir_);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(nlohmann::json::accept(read_file(path("out/sub/r.json"))));
  EXPECT_TRUE(nlohmann::json::accept(read_file(path("out/t.json"))));
}

TEST_F(TensorwireCli, ASuccessfulRunLeavesNoTemporaryFile) {
  const CliRun r = run("run " + quoted(kQuickstart) + " --json " + quoted(path("r.json").string()) +
                       " --trace " + quoted(path("t.json").string()));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"r.json", "stderr.txt", "stdout.txt", "t.json"}));
}

TEST_F(TensorwireCli, AnOutputOntoTheScenarioIsRefusedAndTheScenarioKept) {
  const std::string original = read_file(kQuickstart);
  std::ofstream(path("s.toml"), std::ios::binary) << original;
  const std::string scenario = path("s.toml").string();
  for (const char* flag : {"--json", "--trace"}) {
    // Spelled differently from the scenario argument: one file all the same.
    const CliRun r = run("run " + quoted(scenario) + " " + flag + " " +
                         quoted((dir_ / "." / "s.toml").string()));
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_TRUE(contains(r.err, std::string("tensorwire: error: ") + flag +
                                    " would overwrite the scenario file '" + scenario + "'"))
        << r.err;
    EXPECT_FALSE(contains(r.out, "PASS")) << r.out;
    EXPECT_EQ(read_file(scenario), original) << flag;
  }
  // A relative --json naming the scenario given by its absolute path.
  EXPECT_EQ(run("run " + quoted(scenario) + " --json s.toml", dir_).exit_code, 2);
  EXPECT_EQ(read_file(scenario), original);
}

TEST_F(TensorwireCli, PlanDotOntoTheScenarioIsRefused) {
  const std::string original =
      read_file(std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/broadcast_mixed.toml");
  std::ofstream(path("b.toml"), std::ios::binary) << original;
  const CliRun r = run("plan " + quoted(path("b.toml").string()) + " --dot " +
                       quoted(path("b.toml").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--dot would overwrite the scenario file")) << r.err;
  EXPECT_EQ(read_file(path("b.toml")), original);
}

TEST_F(TensorwireCli, SameFileForTraceAndJsonIsBadInput) {
  const std::string same = path("both.json").string();
  const CliRun r =
      run("run " + quoted(kQuickstart) + " --json " + quoted(same) + " --trace " +
          quoted((dir_ / "." / "both.json").string()));
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(TensorwireCli, NoScenarioRunsTheQuickstartAndPrintsTheSeed) {
  const CliRun r = run("run");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "--seed ")) << r.out;
  EXPECT_TRUE(contains(r.out, "seed ")) << r.out;
  EXPECT_TRUE(contains(r.out, "PASS")) << r.out;
  EXPECT_TRUE(contains(r.out, "bytes on the wire")) << r.out;
  EXPECT_TRUE(contains(r.out, "control msgs / tensor")) << r.out;
  EXPECT_TRUE(r.err.empty()) << "no progress bar when stderr is not a terminal:\n" << r.err;
}

TEST_F(TensorwireCli, SameSeedGivesByteIdenticalJsonAndTrace) {
  const auto run_seed = [&](const std::string& tag, int seed) {
    const CliRun r = run("run " + quoted(kQuickstart) + " --seed " + std::to_string(seed) +
                         " --json " + quoted(path(tag + ".json").string()) + " --trace " +
                         quoted(path(tag + ".trace.json").string()));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "--seed " + std::to_string(seed))) << r.out;
    return r;
  };
  const CliRun first = run_seed("a", 7);
  const CliRun second = run_seed("b", 7);
  const std::string json_a = read_file(path("a.json"));
  const std::string trace_a = read_file(path("a.trace.json"));
  ASSERT_FALSE(json_a.empty());
  ASSERT_FALSE(trace_a.empty());
  EXPECT_EQ(json_a, read_file(path("b.json")));
  EXPECT_EQ(trace_a, read_file(path("b.trace.json")));
  // stdout is deterministic too, up to the output file names it reports.
  const auto summary_part = [](const std::string& out) {
    return out.substr(0, out.find("results JSON:"));
  };
  const auto trace_hash = [](const std::string& out) {
    const size_t at = out.find("hash 0x");
    return at == std::string::npos ? std::string() : out.substr(at, 23);
  };
  EXPECT_EQ(summary_part(first.out), summary_part(second.out));
  EXPECT_FALSE(trace_hash(first.out).empty()) << first.out;
  EXPECT_EQ(trace_hash(first.out), trace_hash(second.out));

  const auto results = nlohmann::json::parse(json_a);
  EXPECT_EQ(results.at("seed"), 7);
  EXPECT_EQ(results.at("passed"), true);
  EXPECT_EQ(results.at("mode"), "payload");
  EXPECT_FALSE(results.at("steps").empty());
  EXPECT_GT(results.at("transport").at("bytes_on_wire").get<uint64_t>(), 0u);

  const auto trace = nlohmann::json::parse(trace_a);
  size_t slices = 0;
  for (const auto& e : trace.at("traceEvents")) slices += e.at("ph") == "X" ? 1 : 0;
  EXPECT_GT(slices, 0u);
  EXPECT_EQ(trace.at("otherData").at("seed"), "7");

  // Another seed: a different run that still passes every check.
  run_seed("c", 8);
  const auto other = nlohmann::json::parse(read_file(path("c.json")));
  EXPECT_EQ(other.at("seed"), 8);
  EXPECT_EQ(other.at("passed"), true);
}

TEST_F(TensorwireCli, TimingOnlyRunsWithoutPayload) {
  const CliRun r = run("run " + quoted(kQuickstart) + " --timing-only --json " +
                       quoted(path("t.json").string()));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(path("t.json"))).at("mode"), "timing");
}

// Issue 18: check runs in payload mode whatever the scenario's [run] mode,
// so a timing-mode scenario too big for the memory limit (broadcast_8x4:
// 33 GiB of instances) is refused before anything is allocated, as bad input
// naming the estimate, the limit and the flag, with no counterexample.
TEST_F(TensorwireCli, CheckRefusesAScenarioAboveTheMemoryLimitUpFront) {
  const std::string big = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/broadcast_8x4.toml";
  const CliRun r = run("check " + quoted(big) + " --memory-limit 16GiB", dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  for (const char* part : {"cannot be checked as it is", "not a protocol bug",
                           "payload memory: about 33.", "16.0 GiB", "--memory-limit"}) {
    EXPECT_TRUE(contains(r.err, part)) << part << " missing from:\n" << r.err;
  }
  EXPECT_FALSE(contains(r.out, "schedules")) << "nothing ran:\n" << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "tensorwire-check.schedule"));

  const CliRun small = run("check " + quoted(kQuickstart) + " --memory-limit 1KiB", dir_);
  EXPECT_EQ(small.exit_code, 2) << small.out << small.err;
  EXPECT_TRUE(contains(small.err, "cannot be checked as it is")) << small.err;
  EXPECT_TRUE(contains(small.err, "above the memory limit of 1.00 KiB (--memory-limit)")) << small.err;
  EXPECT_FALSE(fs::exists(dir_ / "tensorwire-check.schedule"));
}

TEST_F(TensorwireCli, RunRefusesAPayloadRunAboveTheMemoryLimit) {
  const CliRun r = run("run " + quoted(kQuickstart) + " --memory-limit 1KiB --json " +
                       quoted(path("r.json").string()));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  for (const char* part : {"too big to run in payload mode", "payload memory: about",
                           "1.00 KiB (--memory-limit)", "timing mode"}) {
    EXPECT_TRUE(contains(r.err, part)) << part << " missing from:\n" << r.err;
  }
  EXPECT_FALSE(fs::exists(path("r.json"))) << "refused before anything ran";
  // Timing mode holds no tensor bytes: the same limit lets it run.
  EXPECT_EQ(run("run " + quoted(kQuickstart) + " --memory-limit 1KiB --timing-only").exit_code, 0);
  // A limit above the estimate runs as before.
  EXPECT_EQ(run("run " + quoted(kQuickstart) + " --memory-limit 1GiB").exit_code, 0);
}

TEST_F(TensorwireCli, ABadMemoryLimitIsBadInputNamingTheFlag) {
  for (const char* bad : {"0", "lots", "-5", "1.5B", "12parsecs", "''"}) {
    for (const std::string& command : {"run " + quoted(kQuickstart), "check " + quoted(kQuickstart)}) {
      const CliRun r = run(command + " --memory-limit " + bad);
      EXPECT_EQ(r.exit_code, 2) << command << " " << bad << "\n" << r.out << r.err;
      EXPECT_TRUE(contains(r.err, "--memory-limit")) << bad << ": " << r.err;
    }
  }
  const CliRun verbs = run("run " + quoted(kQuickstart) + " --backend verbs --memory-limit 1GiB");
  EXPECT_EQ(verbs.exit_code, 2) << verbs.err;
  EXPECT_TRUE(contains(verbs.err, "--memory-limit applies to the simulator")) << verbs.err;
}

const std::string kBroadcastMixed =
    std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/broadcast_mixed.toml";

// model_2x2 sends from host memory only: a run of it must say which paths it
// never exercised, on stdout and in the results JSON.
TEST_F(TensorwireCli, RunPrintsCoverageAndNamesWhatItNeverReached) {
  const std::string model_2x2 = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_2x2.toml";
  const CliRun r = run("run " + quoted(model_2x2) + " --json " + quoted(path("c.json").string()));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "\ncoverage        states ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nnever reached   ")) << r.out;
  EXPECT_TRUE(contains(r.out, "GPU source staged to host (no GPUDirect)")) << r.out;
  EXPECT_TRUE(contains(r.out, "string tensor serialized")) << r.out;
  // Reached, so not listed.
  EXPECT_FALSE(contains(r.out, "zero copy: the NIC reads the sent tensor")) << r.out;
  const auto j = nlohmann::json::parse(read_file(path("c.json")));
  const auto& paths = j.at("coverage").at("paths");
  EXPECT_GT(paths.at("declared").get<uint64_t>(), paths.at("reached").get<uint64_t>());
  bool staging = false;
  for (const auto& item : paths.at("never_reached")) {
    staging = staging || item == "GPU source staged to host (no GPUDirect)";
  }
  EXPECT_TRUE(staging) << paths.dump();
}

TEST_F(TensorwireCli, CheckPrintsCoverage) {
  const std::string strings = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_strings.toml";
  const CliRun r = run("check " + quoted(strings) + " --strategy dfs");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "\ncoverage        states ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nnever reached   ")) << r.out;
  EXPECT_FALSE(contains(r.out, "string tensor serialized")) << r.out;
}

TEST_F(TensorwireCli, RunOnABroadcastScenarioChecksBytesAndWritesItsJson) {
  const CliRun r = run("run " + quoted(kBroadcastMixed) + " --json " + quoted(path("b.json").string()) +
                       " --trace " + quoted(path("b.trace.json").string()));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "hierarchical radix tree")) << r.out;
  EXPECT_TRUE(contains(r.out, "PASS: every destination holds exactly the source bytes")) << r.out;
  const auto j = nlohmann::json::parse(read_file(path("b.json")));
  EXPECT_EQ(j.at("workload").at("kind"), "broadcast");
  EXPECT_EQ(j.at("workload").at("finished"), true);
  EXPECT_EQ(j.at("destinations").size(), 12u);
  EXPECT_GT(j.at("protocol").at("peak_ib_bytes").get<uint64_t>(), 0u);
  EXPECT_EQ(j.at("protocol").at("name"), "realm_collective_broadcast");
  EXPECT_GT(j.at("transport").at("bytes_on_wire").get<uint64_t>(), 0u);
  EXPECT_GT(j.at("links").size(), 0u);
  const auto trace = nlohmann::json::parse(read_file(path("b.trace.json")));
  bool stage_track = false;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.contains("args") &&
        e.at("args").value("name", "").rfind("collective c", 0) == 0) {
      stage_track = true;
    }
  }
  EXPECT_TRUE(stage_track) << "no pipeline stage track in the trace";
}

// Broadcast copies overlap on one queue pair or copy engine; the trace still
// draws them right: on every thread the slices nest or are disjoint, the
// overlapping ones moved to lanes "<track> #2", ... (issue 18, defect 4).
TEST_F(TensorwireCli, TraceSlicesNestOnEveryThread) {
  const std::string scenario =
      std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_broadcast.toml";
  const CliRun r = run("run " + quoted(scenario) + " --timing-only --trace " +
                       quoted(path("t.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto trace = nlohmann::json::parse(read_file(path("t.json")));
  EXPECT_EQ(tensorwire::testing_support::overlapping_slices(trace), std::vector<std::string>{});
  bool lane = false;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name" &&
        e.at("args").at("name").get<std::string>().ends_with(" #2")) {
      lane = true;
    }
  }
  EXPECT_TRUE(lane) << "the scenario overlaps slices on a track, so some track needs a lane";
}

TEST_F(TensorwireCli, PlanWritesTheTransferGraphAsDot) {
  const CliRun r = run("plan " + quoted(kBroadcastMixed) + " --dot " + quoted(path("g.dot").string()));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "transfer graph: ")) << r.out;
  const std::string dot = read_file(path("g.dot"));
  EXPECT_TRUE(contains(dot, "digraph transfer_graph {")) << dot;
  EXPECT_TRUE(contains(dot, "subgraph cluster_node3")) << dot;
  EXPECT_TRUE(contains(dot, "busy from")) << dot;
  EXPECT_TRUE(contains(dot, "(entry buffer)")) << dot;
}

TEST_F(TensorwireCli, PlanOfAScenarioWithoutABroadcastIsBadInput) {
  const CliRun r = run("plan " + quoted(kQuickstart));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "runs the point-to-point protocol 'tf_verbs_zero_copy'")) << r.err;
  EXPECT_EQ(run("plan").exit_code, 2);
}

TEST_F(TensorwireCli, PlanTakesSetOverridesAndNamesABadOne) {
  const CliRun r = run("plan " + quoted(kBroadcastMixed) + " --set workload.registration_window=256KiB");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "--set 'workload.registration_window=256KiB'")) << r.out;
  EXPECT_TRUE(contains(r.out, "registered in windows of 256 KiB")) << r.out;
  const CliRun bad = run("plan " + quoted(kBroadcastMixed) + " --set workload.registration_window=1");
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_TRUE(contains(bad.err, "registration_window")) << bad.err;
  EXPECT_TRUE(contains(bad.err, "at least min_chunk")) << bad.err;
}

TEST_F(TensorwireCli, PlanWithAnImpossibleIbPoolIsBadInputSayingWhy) {
  std::string text = read_file(kBroadcastMixed);
  text += "ib_pool_size = \"1KiB\"\nmin_chunk = \"1KiB\"\n";
  std::ofstream(path("pool.toml")) << text;
  const CliRun r = run("plan " + quoted(path("pool.toml").string()));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  // Planned while loading: the error names the file, the line and the key.
  EXPECT_TRUE(contains(r.err, "pool.toml:")) << r.err;
  EXPECT_TRUE(contains(r.err, "workload.ib_pool_size")) << r.err;
  EXPECT_TRUE(contains(r.err, "IB pool")) << r.err;
}

// Two ranks, one tensor that grows at step 2: small enough to explore.
const char* kCheckScenario = R"(name = "check"
[cluster]
nodes = 2
[workload]
kind = "tensors"
steps = 2
[[workload.tensor]]
name = "a"
src = 0
dst = 1
shape = [16]
[[workload.tensor]]
name = "b"
src = 0
dst = 1
shape = [4]
[[workload.change]]
step = 2
tensor = "a"
shape = [64]
)";

TEST_F(TensorwireCli, CheckFindsNothingInACorrectProtocolAndPrintsTheSeed) {
  std::ofstream(path("c.toml")) << kCheckScenario;
  const CliRun r = run("check " + quoted(path("c.toml").string()) + " --strategy dfs --max-schedules 300");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "--seed 1")) << r.out;
  EXPECT_TRUE(contains(r.out, "distinct states")) << r.out;
  EXPECT_TRUE(contains(r.out, "outcome         nothing found")) << r.out;
  EXPECT_TRUE(contains(r.out, "transitions     RdmaTensorRequest: Idle->Requested")) << r.out;
}

TEST_F(TensorwireCli, CheckReportsASafetyViolationWithAScheduleThatReplays) {
  std::ofstream(path("c.toml")) << kCheckScenario;
  const std::string prefix = path("cex").string();
  const CliRun r = run("check " + quoted(path("c.toml").string()) +
                       " --plant-bug stale_re_request_address --out " + quoted(prefix));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "safety violation")) << r.out;
  const std::string schedule = read_file(prefix + ".schedule");
  EXPECT_EQ(schedule.rfind("tensorwire-schedule 2\n", 0), 0u) << schedule;
  EXPECT_FALSE(read_file(prefix + ".steps.txt").empty());
  EXPECT_TRUE(nlohmann::json::accept(read_file(prefix + ".trace.json")));
  // --replay re-runs exactly that execution: the same violation.
  // The file records the planted bug, so the replay needs no --plant-bug.
  EXPECT_TRUE(contains(schedule, "planted_bug stale_re_request_address\n")) << schedule;
  const CliRun again = run("check " + quoted(path("c.toml").string()) + " --replay " +
                           quoted(prefix + ".schedule") + " --out " + quoted(path("again").string()));
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_TRUE(contains(again.out, "replayed: safety violation")) << again.out;
  // A schedule that does not fit the execution is bad input, not a verdict.
  std::string longer = schedule;
  const size_t count_at = longer.find("choices ") + 8;
  const size_t count_end = longer.find('\n', count_at);
  const uint64_t count = std::stoull(longer.substr(count_at, count_end - count_at));
  longer.replace(count_at, count_end - count_at, std::to_string(count + 3));
  longer += "0 0 0\n";
  std::ofstream(path("longer.schedule")) << longer;
  const CliRun diverged = run("check " + quoted(path("c.toml").string()) + " --replay " +
                              quoted(path("longer.schedule").string()));
  EXPECT_EQ(diverged.exit_code, 2) << diverged.out << diverged.err;
  EXPECT_TRUE(contains(diverged.err, "does not fit")) << diverged.err;
}

// A counterexample a search found is shrunk: PREFIX.schedule is the shrunk
// one and replays to the same violation, PREFIX.original.schedule the one
// found, which replays too. With faults on offer, a violation found in the
// random walk's first, fault-free execution replays without them.
TEST_F(TensorwireCli, CheckShrinksTheCounterexampleAndKeepsTheOriginalBesideIt) {
  std::ofstream(path("c.toml")) << kCheckScenario;
  const std::string prefix = path("cex").string();
  const CliRun r = run("check " + quoted(path("c.toml").string()) +
                       " --plant-bug stale_re_request_address --faults crash --out " + quoted(prefix));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "shrunk: ")) << r.out;
  EXPECT_TRUE(contains(r.out, " deviations (from ")) << r.out;
  EXPECT_TRUE(contains(r.out, prefix + ".original.schedule")) << r.out;
  const std::string shrunk = read_file(prefix + ".schedule");
  const std::string original = read_file(prefix + ".original.schedule");
  EXPECT_TRUE(contains(shrunk, "strategy random, shrunk\n")) << shrunk;
  EXPECT_TRUE(contains(original, "strategy random\n")) << original;
  // Fewer deviations from the default order: nonzero choices.
  auto deviations = [](const std::string& schedule) {
    std::istringstream in(schedule.substr(schedule.find('\n', schedule.find("\nchoices ") + 1)));
    size_t count = 0;
    for (std::string choice; in >> choice;) count += choice != "0";
    return count;
  };
  EXPECT_LT(deviations(shrunk), deviations(original)) << shrunk << original;
  for (const std::string& schedule : {prefix + ".schedule", prefix + ".original.schedule"}) {
    const CliRun again = run("check " + quoted(path("c.toml").string()) + " --replay " +
                             quoted(schedule) + " --out " + quoted(path("again").string()));
    EXPECT_EQ(again.exit_code, 1) << schedule << "\n" << again.out << again.err;
    EXPECT_TRUE(contains(again.out, "replayed: safety violation")) << again.out;
    EXPECT_FALSE(contains(again.out, "shrunk: ")) << again.out;  // a replay is written as it is
  }
  // Replaying the original into the same prefix is no overwrite of the input:
  // a replay writes no .original.schedule.
  const CliRun in_place = run("check " + quoted(path("c.toml").string()) + " --replay " +
                              quoted(prefix + ".original.schedule") + " --out " + quoted(prefix));
  EXPECT_EQ(in_place.exit_code, 1) << in_place.out << in_place.err;
  EXPECT_EQ(read_file(prefix + ".original.schedule"), original);
  // --no-shrink writes the one found and nothing beside it.
  const std::string plain = path("plain").string();
  const CliRun unshrunk = run("check " + quoted(path("c.toml").string()) +
                              " --plant-bug stale_re_request_address --no-shrink --out " +
                              quoted(plain));
  EXPECT_EQ(unshrunk.exit_code, 1) << unshrunk.out << unshrunk.err;
  EXPECT_FALSE(contains(unshrunk.out, "shrunk: ")) << unshrunk.out;
  EXPECT_FALSE(fs::exists(plain + ".original.schedule"));
  EXPECT_EQ(read_file(plain + ".schedule").find("shrunk"), std::string::npos);
}

TEST_F(TensorwireCli, CheckReportsALivenessViolationAsExitThree) {
  std::ofstream(path("c.toml")) << kCheckScenario;
  const CliRun r = run("check " + quoted(path("c.toml").string()) +
                       " --plant-bug reuse_request_index --out " + quoted(path("live").string()));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "liveness violation")) << r.out;
}

const std::string kModelBroadcast =
    std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_broadcast.toml";

TEST_F(TensorwireCli, CheckWithBadInputIsExitTwo) {
  std::ofstream(path("c.toml")) << kCheckScenario;
  std::ofstream(path("bad.schedule")) << "not a schedule\n";
  const CliRun bad_replay = run("check " + quoted(path("c.toml").string()) + " --replay " +
                                quoted(path("bad.schedule").string()));
  EXPECT_EQ(bad_replay.exit_code, 2);
  EXPECT_TRUE(contains(bad_replay.err, "bad.schedule:1: not a schedule file")) << bad_replay.err;
  EXPECT_EQ(run("check " + quoted(path("c.toml").string()) + " --strategy bfs").exit_code, 2);
  EXPECT_EQ(run("check " + quoted(path("c.toml").string()) + " --plant-bug nosuch").exit_code, 2);
  // A bug of the broadcast planted in a tensor workload.
  const CliRun wrong_kind =
      run("check " + quoted(path("c.toml").string()) + " --plant-bug max_consumer_read");
  EXPECT_EQ(wrong_kind.exit_code, 2);
  EXPECT_TRUE(contains(wrong_kind.err, "is a bug of protocol \"realm_collective_broadcast\"")) << wrong_kind.err;
}

// issue 18 #5: only dfs can explore every order; one stopped by
// --max-schedules says so and exits 4, not 0. random and pct say how many
// schedules they ran and exit 0.
TEST_F(TensorwireCli, CheckDfsStoppedBeforeEveryOrderSaysNotExhaustiveAndExitsFour) {
  const CliRun r = run("check " + quoted(kModelBroadcast) + " --strategy dfs --max-schedules 2");
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "outcome         nothing found (not exhaustive: stopped after 2 "
                              "schedules)\n"))
      << r.out;
  EXPECT_FALSE(contains(r.out, "every order explored")) << r.out;
  const CliRun random = run("check " + quoted(kModelBroadcast) + " --max-schedules 3");
  EXPECT_EQ(random.exit_code, 0) << random.out << random.err;
  EXPECT_TRUE(contains(random.out, "outcome         nothing found in 3 schedules\n")) << random.out;
}

// issue 18 #11: a flag that names a file, a device or an address and is given
// an empty string (or no address at all) is an error naming the flag, not a
// run that silently writes nothing or fails later for another reason.
TEST_F(TensorwireCli, EmptyNamesAndBadAddressesAreErrorsNamingTheFlag) {
  const std::string q = quoted(kQuickstart);
  for (const std::string& args :
       {"run " + q + " --json ''", "run " + q + " --trace ''", "check " + q + " --out ''",
        "check " + q + " --replay ''", "plan " + q + " --dot ''",
        "launch " + q + " --json ''"}) {
    const CliRun r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "needs a value, not an empty string")) << args << "\n" << r.err;
  }
  for (const char* address : {"999.1.1.1", "10.0.0", "rxe0", "10.0.0.1:7"}) {
    const CliRun r = run("run " + q + " --backend verbs --device rxe0 --address " + address);
    EXPECT_EQ(r.exit_code, 2) << address << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "--address: '" + std::string(address) + "' is not an IPv4 address"))
        << r.err;
  }
}

// issue 18 #11: flags a strategy does not take, and a negative seed, are bad
// input naming the flag, not silently ignored or wrapped around.
TEST_F(TensorwireCli, CheckRejectsFlagsItsStrategyIgnoresAndNegativeSeeds) {
  std::ofstream(path("c.toml")) << kCheckScenario;
  const std::string c = "check " + quoted(path("c.toml").string());
  const CliRun exact = run(c + " --exact --max-schedules 3");
  EXPECT_EQ(exact.exit_code, 2) << exact.out << exact.err;
  EXPECT_TRUE(contains(exact.err, "--exact applies to --strategy dfs only, not random")) << exact.err;
  const CliRun depth = run(c + " --strategy dfs --pct-depth 5 --max-schedules 3");
  EXPECT_EQ(depth.exit_code, 2) << depth.out << depth.err;
  EXPECT_TRUE(contains(depth.err, "--pct-depth applies to --strategy pct only, not dfs")) << depth.err;
  EXPECT_EQ(run(c + " --strategy pct --pct-depth 5 --max-schedules 3").exit_code, 0);
  const CliRun negative = run(c + " --seed -5 --max-schedules 3");
  EXPECT_EQ(negative.exit_code, 2) << negative.out << negative.err;
  EXPECT_TRUE(contains(negative.err, "seed must be a whole number from 0 to 2^64-1, not '-5'"))
      << negative.err;
  EXPECT_EQ(run(c + " --seed 18446744073709551616 --max-schedules 3").exit_code, 2);
  const CliRun top = run(c + " --seed 18446744073709551615 --max-schedules 3");
  EXPECT_EQ(top.exit_code, 0) << top.out << top.err;
  EXPECT_TRUE(contains(top.out, "--seed 18446744073709551615 ")) << top.out;
}

TEST_F(TensorwireCli, CheckExploresTimeoutsAndAbortsWithSeveralFaultsAndReplays) {
  const std::string scenario = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_timeouts.toml";
  const std::string c = "check " + quoted(scenario);
  const CliRun clean = run(c + " --strategy random --faults timeout,abort --max-faults 2 --max-schedules 50");
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_TRUE(contains(clean.out, "--faults timeout,abort --max-faults 2")) << clean.out;
  const std::string prefix = path("withdraw").string();
  const CliRun bug = run(c + " --strategy dfs --faults timeout,abort --max-faults 2 --plant-bug free_on_withdraw "
                         "--max-schedules 200 --out " + quoted(prefix));
  EXPECT_EQ(bug.exit_code, 1) << bug.out << bug.err;
  const std::string schedule = read_file(prefix + ".schedule");
  EXPECT_TRUE(contains(schedule, "faults timeout,abort\nmax_faults 2\n")) << schedule;
  const CliRun again = run(c + " --replay " + quoted(prefix + ".schedule") + " --out " + quoted(path("again").string()));
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_TRUE(contains(again.out, "replayed: safety violation")) << again.out;
  // Flags that cannot apply are refused, naming why.
  const CliRun zero = run(c + " --faults timeout --max-faults 0");
  EXPECT_EQ(zero.exit_code, 2) << zero.out << zero.err;
  EXPECT_TRUE(contains(zero.err, "--max-faults")) << zero.err;
  const CliRun alone = run(c + " --max-faults 2");
  EXPECT_EQ(alone.exit_code, 2) << alone.out << alone.err;
  EXPECT_TRUE(contains(alone.err, "--max-faults applies with --faults only")) << alone.err;
  const std::string broadcast = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_broadcast.toml";
  const CliRun abort = run("check " + quoted(broadcast) + " --faults abort --max-schedules 3");
  EXPECT_EQ(abort.exit_code, 2) << abort.out << abort.err;
  EXPECT_TRUE(contains(abort.err, "which has no steps an application aborts")) << abort.err;
  const CliRun swarm_abort = run("check " + quoted(broadcast) + " --swarm 2 --faults abort --max-schedules 3");
  EXPECT_EQ(swarm_abort.exit_code, 2) << swarm_abort.out << swarm_abort.err;
  EXPECT_TRUE(contains(swarm_abort.err, "which has no steps an application aborts")) << swarm_abort.err;
}

// issue 18 #11: a schedule file with CRLF line endings replays.
TEST_F(TensorwireCli, CheckReplaysAScheduleFileWithCrlfLineEndings) {
  std::ofstream(path("c.toml")) << kCheckScenario;
  const std::string prefix = path("cex").string();
  ASSERT_EQ(run("check " + quoted(path("c.toml").string()) +
                " --plant-bug stale_re_request_address --out " + quoted(prefix))
                .exit_code,
            1);
  std::string crlf;
  for (char ch : read_file(prefix + ".schedule")) {
    if (ch == '\n') crlf += '\r';
    crlf += ch;
  }
  std::ofstream(path("crlf.schedule"), std::ios::binary) << crlf;
  const CliRun r = run("check " + quoted(path("c.toml").string()) + " --replay " +
                       quoted(path("crlf.schedule").string()) + " --out " +
                       quoted(path("again").string()));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "replayed: safety violation")) << r.out << r.err;
}

// issue 18 #9: a schedule names the scenario it was recorded for (its name,
// a hash of its file); replayed on another one it is refused, naming both,
// before anything runs. A file written before these fields still replays.
TEST_F(TensorwireCli, CheckRefusesToReplayAScheduleRecordedForAnotherScenario) {
  const std::string check = kCheckScenario;
  std::ofstream(path("c.toml")) << check;
  const std::string prefix = path("cex").string();
  ASSERT_EQ(run("check " + quoted(path("c.toml").string()) +
                " --plant-bug stale_re_request_address --out " + quoted(prefix))
                .exit_code,
            1);
  const std::string schedule = read_file(prefix + ".schedule");
  const std::string hash = tensorwire::report::format_hash(tensorwire::report::fnv1a_64(check));
  EXPECT_TRUE(contains(schedule, "\nscenario_name check\nscenario_hash " + hash + "\n")) << schedule;
  // Another scenario: another name and other bytes.
  std::string other = check;
  other.replace(other.find("name = \"check\""), 14, "name = \"other\"");
  std::ofstream(path("other.toml")) << other;
  const std::string other_hash = tensorwire::report::format_hash(tensorwire::report::fnv1a_64(other));
  const CliRun wrong = run("check " + quoted(path("other.toml").string()) + " --replay " +
                           quoted(prefix + ".schedule") + " --out " + quoted(path("again").string()));
  EXPECT_EQ(wrong.exit_code, 2) << wrong.out << wrong.err;
  EXPECT_TRUE(contains(wrong.err, "cex.schedule: the schedule was recorded for scenario 'check' (hash " +
                                      hash + "); this is 'other' (hash " + other_hash + ")"))
      << wrong.err;
  EXPECT_FALSE(contains(wrong.out, "replayed")) << wrong.out;
  EXPECT_FALSE(fs::exists(path("again.schedule")));
  // The same name, edited: the hash tells them apart.
  std::ofstream(path("edited.toml")) << check << "# edited\n";
  const CliRun edited = run("check " + quoted(path("edited.toml").string()) + " --replay " +
                            quoted(prefix + ".schedule"));
  EXPECT_EQ(edited.exit_code, 2) << edited.out << edited.err;
  EXPECT_TRUE(contains(edited.err, "recorded for scenario 'check' (hash " + hash + "); this is 'check' (hash "))
      << edited.err;
  // An older file, without the fields, replays as before.
  std::string old = schedule;
  for (const char* field : {"scenario_name ", "scenario_hash "}) {
    const size_t at = old.find(field);
    old.erase(at, old.find('\n', at) + 1 - at);
  }
  std::ofstream(path("old.schedule")) << old;
  const CliRun replayed = run("check " + quoted(path("c.toml").string()) + " --replay " +
                              quoted(path("old.schedule").string()) + " --out " +
                              quoted(path("again").string()));
  EXPECT_EQ(replayed.exit_code, 1) << replayed.out << replayed.err;
  EXPECT_TRUE(contains(replayed.out, "replayed: safety violation")) << replayed.out << replayed.err;
}

TEST_F(TensorwireCli, CheckRefusesACounterexampleFileOntoTheScenario) {
  std::ofstream(path("cx.steps.txt")) << kCheckScenario;
  const CliRun r = run("check " + quoted(path("cx.steps.txt").string()) +
                       " --plant-bug reuse_request_index --out " + quoted(path("cx").string()));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "would overwrite the scenario file")) << r.err;
  EXPECT_EQ(read_file(path("cx.steps.txt")), kCheckScenario);
  EXPECT_FALSE(fs::exists(path("cx.schedule")));
}

TEST_F(TensorwireCli, CheckExactSaysEveryOrderWithoutTheAbstraction) {
  const CliRun r = run("check " + quoted(kModelBroadcast) +
                       " --strategy dfs --exact --max-schedules 100000");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, " --exact\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "(every order explored)\n")) << r.out;
}

TEST_F(TensorwireCli, CheckExploresABroadcastWithItsOwnInvariants) {
  const CliRun clean = run("check " + quoted(kModelBroadcast) + " --strategy dfs --max-schedules 100000");
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_TRUE(contains(clean.out, "every order explored")) << clean.out;
  EXPECT_TRUE(contains(clean.out, "the protocol's own (realm_collective_broadcast)")) << clean.out;

  const std::string prefix = path("bc").string();
  const CliRun bug = run("check " + quoted(kModelBroadcast) +
                         " --plant-bug free_at_first_consumer --out " + quoted(prefix));
  EXPECT_EQ(bug.exit_code, 1) << bug.out << bug.err;
  EXPECT_TRUE(contains(bug.out, "freed while its consumer")) << bug.out;
  EXPECT_TRUE(contains(read_file(prefix + ".schedule"), "planted_bug free_at_first_consumer"));
  // The schedule replays to the same violation.
  const CliRun replay =
      run("check " + quoted(kModelBroadcast) + " --replay " + quoted(prefix + ".schedule"));
  EXPECT_EQ(replay.exit_code, 1) << replay.out << replay.err;
  EXPECT_TRUE(contains(replay.out, "freed while its consumer")) << replay.out;
}

const std::string kModel2x3 = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_2x3.toml";

// What `check --swarm` says of each scenario: "swarm-SEED (size Z): ..." of
// its "[i/N] " line.
std::vector<std::string> swarm_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("] swarm-");
    if (line.rfind('[', 0) == 0 && at != std::string::npos) lines.push_back(line.substr(at + 2));
  }
  return lines;
}

// --swarm: the scenario names the protocol; it draws the scenarios checked.
TEST_F(TensorwireCli, CheckSwarmFindsNothingInTheCorrectProtocolsAndIsDeterministic) {
  for (const std::string& scenario : {kModel2x3, kModelBroadcast}) {
    const CliRun r = run("check " + quoted(scenario) + " --swarm 8 --max-schedules 20 --seed 5");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, " --swarm 8 --strategy random --seed 5 --max-schedules 20\n")) << r.out;
    EXPECT_TRUE(contains(r.out, "[8/8] swarm-")) << r.out;
    EXPECT_TRUE(contains(r.out, "swarm: 8 scenarios checked, 160 schedules, no violation\n")) << r.out;
    // The same seed draws and checks the same scenarios; another seed others.
    EXPECT_EQ(run("check " + quoted(scenario) + " --swarm 8 --max-schedules 20 --seed 5").out, r.out);
    const CliRun other = run("check " + quoted(scenario) + " --swarm 8 --max-schedules 20 --seed 6");
    EXPECT_EQ(other.exit_code, 0) << other.out << other.err;
    EXPECT_NE(other.out.substr(other.out.find('\n')), r.out.substr(r.out.find('\n')));
    // Scenario i does not depend on N: a shorter swarm checks the first ones.
    const CliRun shorter = run("check " + quoted(scenario) + " --swarm 3 --max-schedules 20 --seed 5");
    const std::vector<std::string> eight = swarm_lines(r.out);
    ASSERT_EQ(eight.size(), 8u) << r.out;
    EXPECT_EQ(swarm_lines(shorter.out), std::vector<std::string>(eight.begin(), eight.begin() + 3))
        << shorter.out << r.out;
  }
  // dfs: a drawn scenario not explored to the end makes it exit 4, as check does.
  const CliRun dfs = run("check " + quoted(kModel2x3) + " --swarm 10 --strategy dfs --max-schedules 3");
  EXPECT_EQ(dfs.exit_code, 4) << dfs.out << dfs.err;
  EXPECT_TRUE(contains(dfs.out, "explored exhaustively")) << dfs.out;
}

// ignore_proto_size needs a string tensor whose string size changes: the
// shipped model scenario never has one, the swarm draws one.
TEST_F(TensorwireCli, CheckSwarmFindsABugTheModelScenarioMissesAndItReplays) {
  const CliRun model = run("check " + quoted(kModel2x3) +
                           " --plant-bug ignore_proto_size --max-schedules 300 --out " +
                           quoted(path("model").string()));
  EXPECT_EQ(model.exit_code, 0) << model.out << model.err;
  const std::string prefix = path("sw").string();
  const CliRun r = run("check " + quoted(kModel2x3) + " --swarm 100 --max-schedules 100 --seed 1 " +
                       "--plant-bug ignore_proto_size --out " + quoted(prefix));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "swarm: violation in scenario ")) << r.out;
  EXPECT_TRUE(contains(r.out, "shrunk in ")) << r.out;
  EXPECT_TRUE(contains(r.out, "safety violation")) << r.out;
  const std::string scenario = read_file(prefix + ".scenario.toml");
  EXPECT_TRUE(contains(scenario, "dtype = \"string\"")) << scenario;
  EXPECT_TRUE(contains(scenario, "[[workload.change]]")) << scenario;
  // The schedule names the scenario file and its hash: replay from the two.
  const std::string schedule = read_file(prefix + ".schedule");
  EXPECT_TRUE(contains(schedule, "scenario " + prefix + ".scenario.toml\n")) << schedule;
  EXPECT_TRUE(contains(schedule, "planted_bug ignore_proto_size\n")) << schedule;
  const CliRun replay = run("check " + quoted(prefix + ".scenario.toml") + " --replay " +
                            quoted(prefix + ".schedule") + " --out " + quoted(path("again").string()));
  EXPECT_EQ(replay.exit_code, 1) << replay.out << replay.err;
  EXPECT_TRUE(contains(replay.out, "replayed: safety violation")) << replay.out;
  // The replay names the same problems the swarm's counterexample did.
  const size_t failing = r.out.rfind("failing schedule:");
  ASSERT_NE(failing, std::string::npos) << r.out;
  const size_t line = r.out.find('\n', failing) + 1;
  const std::string problem = r.out.substr(line, r.out.find('\n', line) + 1 - line);
  EXPECT_TRUE(contains(problem, "  ")) << r.out;
  EXPECT_TRUE(contains(replay.out, problem)) << problem << replay.out;
}

TEST_F(TensorwireCli, CheckSwarmFindsABroadcastBugWithTheScenarioBesideTheSchedule) {
  const std::string prefix = path("bc").string();
  const CliRun r = run("check " + quoted(kModelBroadcast) + " --swarm 100 --max-schedules 100 " +
                       "--seed 1 --plant-bug max_consumer_read --out " + quoted(prefix));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(read_file(prefix + ".scenario.toml"), "kind = \"broadcast\"\n"));
  const CliRun replay = run("check " + quoted(prefix + ".scenario.toml") + " --replay " +
                            quoted(prefix + ".schedule") + " --out " + quoted(path("again").string()));
  EXPECT_EQ(replay.exit_code, 1) << replay.out << replay.err;
}

TEST_F(TensorwireCli, CheckSwarmRefusesFlagsThatDoNotFit) {
  std::ofstream(path("c.toml")) << kCheckScenario;
  const std::string c = quoted(path("c.toml").string());
  EXPECT_EQ(run("check " + c + " --swarm 0").exit_code, 2);
  const CliRun replay = run("check " + c + " --swarm 3 --replay " + c);
  EXPECT_EQ(replay.exit_code, 2);
  EXPECT_TRUE(contains(replay.err, "does not go with --swarm")) << replay.err;
  const CliRun bug = run("check " + c + " --swarm 3 --plant-bug max_consumer_read");
  EXPECT_EQ(bug.exit_code, 2);
  EXPECT_TRUE(contains(bug.err, "is not a bug of protocol \"tf_verbs_zero_copy\"")) << bug.err;
  // PREFIX.scenario.toml would overwrite the scenario given.
  std::ofstream(path("x.scenario.toml")) << kCheckScenario;
  const CliRun overwrite = run("check " + quoted(path("x.scenario.toml").string()) + " --swarm 3 --out " +
                               quoted(path("x").string()));
  EXPECT_EQ(overwrite.exit_code, 2) << overwrite.out;
  EXPECT_TRUE(contains(overwrite.err, "x.scenario.toml")) << overwrite.err;
}

TEST_F(TensorwireCli, CompareSetsTwoRunsSideBySidePerStepAndTensor) {
  const std::string a = path("a.json").string();
  const std::string b = path("b.json").string();
  ASSERT_EQ(run("run " + quoted(kQuickstart) + " --json " + quoted(a)).exit_code, 0);
  // B: the same run with wall times twice the simulated ones, as verbs would write.
  auto results = nlohmann::json::parse(read_file(a));
  results["backend"] = "verbs";
  for (auto& step : results["steps"]) {
    step["measured_ns"] = 2 * step["duration_ns"].get<int64_t>();
    for (auto& tensor : step["per_tensor"]) {
      tensor["measured_ns"] = 2 * tensor["latency_ns"].get<int64_t>();
    }
  }
  std::ofstream(b) << results.dump(2);

  const CliRun r = run("compare " + quoted(a) + " " + quoted(b));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_TRUE(contains(r.out, "B: " + b + " (backend verbs, scenario quickstart")) << r.out;
  EXPECT_TRUE(contains(r.out, "sim/measured")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nstep 1 ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n  weights 0->1 ")) << r.out;
  EXPECT_TRUE(contains(r.out, " wall  2.000         0.500\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "steps: 3 in both, 0 only in A, 0 only in B")) << r.out;
}

// compare reads a broadcast's results too: the broadcast's finish, then each
// destination's done time, matched by memory.
TEST_F(TensorwireCli, CompareSetsTwoBroadcastsSideBySidePerDestination) {
  const std::string a = path("a.json").string();
  const std::string b = path("b.json").string();
  ASSERT_EQ(run("run " + quoted(kBroadcastMixed) + " --timing-only --json " + quoted(a)).exit_code, 0);
  // B: every destination done twice as late, one never done.
  auto results = nlohmann::json::parse(read_file(a));
  const std::string first = results["destinations"][0]["memory"];
  for (auto& d : results["destinations"]) d["done_ns"] = 2 * d["done_ns"].get<int64_t>();
  results["destinations"][1]["done_ns"] = -1;
  std::ofstream(b) << results.dump(2);

  const CliRun r = run("compare " + quoted(a) + " " + quoted(b));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "\nbroadcast ")) << r.out;
  EXPECT_TRUE(contains(r.out, "never finished in B")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n  " + first + " ")) << r.out;
  EXPECT_TRUE(contains(r.out, "never completed in B")) << r.out;
  EXPECT_TRUE(contains(r.out, "2.000")) << r.out;
  EXPECT_TRUE(contains(r.out, "tensors: 12 in both")) << r.out;
}

TEST_F(TensorwireCli, CompareHelpNamesBothFiles) {
  const CliRun r = run("compare --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "A REQUIRED")) << r.out;
  EXPECT_TRUE(contains(r.out, "B REQUIRED")) << r.out;
}

TEST_F(TensorwireCli, CompareWithBadInputIsExitTwoNamingTheFileAndPath) {
  const std::string good = path("good.json").string();
  ASSERT_EQ(run("run " + quoted(kQuickstart) + " --json " + quoted(good)).exit_code, 0);
  const std::string missing = path("missing.json").string();
  const CliRun no_file = run("compare " + quoted(good) + " " + quoted(missing));
  EXPECT_EQ(no_file.exit_code, 2);
  EXPECT_TRUE(contains(no_file.err, "tensorwire: error: " + missing + ": cannot open"))
      << no_file.err;
  EXPECT_TRUE(no_file.out.empty()) << no_file.out;

  auto results = nlohmann::json::parse(read_file(good));
  results["steps"][2]["per_tensor"][0]["latency_ns"] = "slow";
  const std::string wrong = path("wrong.json").string();
  std::ofstream(wrong) << results.dump();
  const CliRun wrong_type = run("compare " + quoted(wrong) + " " + quoted(good));
  EXPECT_EQ(wrong_type.exit_code, 2);
  EXPECT_TRUE(contains(wrong_type.err, wrong + ": steps[2].per_tensor[0].latency_ns: expected a "
                                               "number, got a string"))
      << wrong_type.err;

  EXPECT_EQ(run("compare " + quoted(good)).exit_code, 2);  // B missing
}

// issue 18 #6: a number beyond double's range (1e400) is bad input naming the
// file and where, not an internal error (70).
TEST_F(TensorwireCli, CompareWithANumberOutOfRangeIsExitTwoNamingTheFile) {
  const std::string good = path("good.json").string();
  ASSERT_EQ(run("run " + quoted(kQuickstart) + " --json " + quoted(good)).exit_code, 0);
  std::string text = read_file(good);
  const size_t at = text.find("\"seed\":");
  ASSERT_NE(at, std::string::npos) << text.substr(0, 300);
  const size_t value = text.find_first_of("0123456789", at);
  text.replace(value, text.find_first_not_of("0123456789", value) - value, "1e400");
  const std::string huge = path("huge.json").string();
  std::ofstream(huge) << text;
  const CliRun r = run("compare " + quoted(good) + " " + quoted(huge));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "tensorwire: error: " + huge +
                                  ": not valid JSON: number overflow parsing '1e400' at line "))
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(TensorwireCli, ProtocolsListsEveryRegisteredProtocolByShape) {
  CliRun r = run("protocols --names");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string expected;
  for (const tensorwire::ProtocolDescriptor* p : tensorwire::registered_protocols()) {
    expected += std::string(p->name()) + "\n";
  }
  EXPECT_EQ(r.out, expected);
  r = run("protocols --shape point-to-point --names");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const tensorwire::ProtocolDescriptor* p : tensorwire::registered_protocols()) {
    const bool listed = contains(r.out, std::string(p->name()) + "\n");
    EXPECT_EQ(listed, p->shape() == tensorwire::ProtocolShape::kPointToPoint) << p->name();
  }
  r = run("protocols");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "planted bugs (check --plant-bug): ")) << r.out;
  r = run("protocols --shape ring");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--shape must be 'point-to-point' or 'collective'")) << r.err;
}

TEST_F(TensorwireCli, TopologyDescribesTheFabricAndDrawsItAsDot) {
  const std::string ls = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/all_to_all_leaf_spine.toml";
  CliRun r = run("topology " + quoted(ls));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "leaf_spine: 8 nodes, 2 leaves of 4, 2 spines, each leaf-spine link 50 Gbps"))
      << r.out;
  r = run("topology " + quoted(ls) + " --dot");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("graph \"all_to_all_leaf_spine\" {", 0), 0u) << r.out;
  EXPECT_TRUE(contains(r.out, "spine1 -- leaf1")) << r.out;
  // The file gets the same graph; stdout the description.
  r = run("topology " + quoted(ls) + " --dot-file " + quoted(path("g.dot").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(read_file(path("g.dot")), "spine1 -- leaf1"));
  EXPECT_TRUE(contains(r.out, "leaf_spine: ")) << r.out;
  r = run("topology " + quoted(kQuickstart));
  EXPECT_EQ(r.out, "star: 2 nodes, 100 Gbps per NIC\n");
  // A scenario with a bad topology is bad input, named with file:line.
  std::ofstream(path("bad.toml")) << "[cluster]\nnodes = 6\ntopology = \"leaf_spine\"\nleaf_nodes = 4\nspines = 1\n";
  r = run("topology " + quoted(path("bad.toml").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "bad.toml:4:")) << r.err;
  EXPECT_TRUE(contains(r.err, "do not divide the cluster's 6 nodes")) << r.err;
}

}  // namespace
