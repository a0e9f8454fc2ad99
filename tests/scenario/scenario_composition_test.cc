// Composing a scenario from more than its file: a top-level `include` of
// hardware profiles (scenario_include.h), `--set KEY=VALUE` overrides
// (scenario_override.h), and a tensor's size given as `bytes`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "scenario/scenario_loader.h"
#include "scenario/scenario_override.h"

namespace tensorwire {
namespace {

constexpr const char* kWorkload = R"(
[workload]
kind = "tensors"
steps = 2
[[workload.tensor]]
name = "a"
src = 0
dst = 1
shape = [4]
[[workload.tensor]]
name = "b"
src = 1
dst = 0
dtype = "uint8"
bytes = "3KiB"
)";

class Composition : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tensorwire_composition_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "profiles");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& relative, const std::string& text) {
    std::ofstream(dir_ / relative) << text;
    return (dir_ / relative).string();
  }
  std::string error_of(const std::string& path, std::vector<ScenarioOverride> overrides = {}) {
    try {
      load_scenario_file(path, overrides);
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "(loaded without error)";
  }
  std::filesystem::path dir_;
};

uint64_t elements_of(const Scenario& s, size_t tensor) {
  return s.workload.steps.at(0).phases.at(0).transfers.at(tensor).shape.num_elements().value();
}

TEST_F(Composition, IncludedProfileFillsKeysTheScenarioLeavesOut) {
  write("profiles/slow.toml",
        "[cluster]\nnic_bandwidth = \"10Gbps\"\nnic_latency = \"7us\"\nnodes = 4\n");
  const std::string path =
      write("s.toml",
            std::string("include = \"profiles/slow.toml\"\n[cluster]\nnodes = 3\n") + kWorkload);
  Scenario s = load_scenario_file(path);
  EXPECT_EQ(s.cluster.nodes, 3u);  // the scenario's own key wins
  EXPECT_EQ(s.cluster.nic_latency_ns, 7000);
  EXPECT_DOUBLE_EQ(s.cluster.nic_bandwidth_bytes_per_s, 10e9 / 8);
}

TEST_F(Composition, EarlierIncludeWinsOverLaterOnes) {
  write("profiles/one.toml", "[cluster]\nnic_latency = \"2us\"\n");
  write("profiles/two.toml", "[cluster]\nnic_latency = \"9us\"\npcie_latency = \"3us\"\n");
  const std::string path =
      write("s.toml",
            std::string("include = [\"profiles/one.toml\", \"profiles/two.toml\"]\n") + kWorkload);
  Scenario s = load_scenario_file(path);
  EXPECT_EQ(s.cluster.nic_latency_ns, 2000);
  EXPECT_EQ(s.cluster.pcie_latency_ns, 3000);
}

TEST_F(Composition, ErrorsInAnIncludedFileNameThatFile) {
  write("profiles/bad.toml", "[cluster]\n\nnic_latency = \"fast\"\n");
  const std::string path =
      write("s.toml", std::string("include = \"profiles/bad.toml\"\n") + kWorkload);
  const std::string e = error_of(path);
  EXPECT_NE(e.find((dir_ / "profiles/bad.toml").string() + ":3:"), std::string::npos) << e;
  EXPECT_NE(e.find("cluster.nic_latency"), std::string::npos) << e;
}

TEST_F(Composition, BadIncludesAreRefusedWithTheirReason) {
  std::string p = write("a.toml", std::string("include = \"profiles/none.toml\"\n") + kWorkload);
  EXPECT_NE(error_of(p).find("no file 'profiles/none.toml'"), std::string::npos) << error_of(p);
  p = write("b.toml", std::string("include = 3\n") + kWorkload);
  EXPECT_NE(error_of(p).find("b.toml:1:"), std::string::npos) << error_of(p);
  write("profiles/nest.toml", "include = \"other.toml\"\n");
  p = write("c.toml", std::string("include = \"profiles/nest.toml\"\n") + kWorkload);
  EXPECT_NE(error_of(p).find("includes do not nest"), std::string::npos) << error_of(p);
  write("profiles/clash.toml", "cluster = 4\n");
  p = write("d.toml",
            std::string("include = \"profiles/clash.toml\"\n[cluster]\nnodes = 2\n") + kWorkload);
  EXPECT_NE(error_of(p).find("in an included file"), std::string::npos) << error_of(p);
  write("profiles/syntax.toml", "[cluster\n");
  p = write("e.toml", std::string("include = \"profiles/syntax.toml\"\n") + kWorkload);
  EXPECT_NE(error_of(p).find("syntax.toml:1:"), std::string::npos) << error_of(p);
}

TEST_F(Composition, OverridesWinOverFileAndIncludeAndReachEveryEntry) {
  write("profiles/p.toml", "[cluster]\nnic_latency = \"7us\"\n");
  const std::string path =
      write("s.toml", std::string("include = \"profiles/p.toml\"\n") + kWorkload);
  std::vector<ScenarioOverride> overrides = {{"cluster.nic_latency", "1us"},
                                             {"cluster.nodes", "5"},
                                             {"workload.tensor[1].bytes", "8KiB"},
                                             {"workload.tensor[*].dst_memory", "host_pageable"},
                                             {"protocol.name", "tf_verbs_zero_copy"}};
  Scenario s = load_scenario_file(path, overrides);
  EXPECT_EQ(s.cluster.nic_latency_ns, 1000);
  EXPECT_EQ(s.cluster.nodes, 5u);
  EXPECT_EQ(elements_of(s, 1), 8192u);
  for (const auto& t : s.workload.steps.at(0).phases.at(0).transfers) {
    EXPECT_EQ(t.dst_kind, MemoryKind::kHostPageable) << t.name;
  }
}

TEST_F(Composition, OverrideErrorsNameTheFlag) {
  const std::string path = write("s.toml", kWorkload);
  auto error_for = [&](const std::string& key, const std::string& value) {
    return error_of(path, {{key, value}});
  };
  EXPECT_EQ(error_for("cluster.nodes", "9999"),
            "--set cluster.nodes=9999: cluster.nodes: 9999 is out of range (allowed 2 to 1024)");
  EXPECT_NE(
      error_for("cluster.bogus", "1").find("--set cluster.bogus=1: cluster.bogus: unknown key"),
      std::string::npos);
  EXPECT_EQ(error_for("workload.tensor[2].bytes", "1"),
            "--set workload.tensor[2].bytes=1: 'tensor' has 2 entries");
  EXPECT_NE(error_for("workload.kind.x", "1").find("'kind' is a string, not a table"),
            std::string::npos);
  EXPECT_NE(error_for("workload.tensor[-1].x", "1").find("is not an index"), std::string::npos);
  EXPECT_NE(error_for("workload.tensor[0]", "1").find("ends in an index"), std::string::npos);
  EXPECT_NE(error_for("a..b", "1").find("an empty key"), std::string::npos);
  EXPECT_NE(error_for("we ird", "1").find("is not a key"), std::string::npos);
  EXPECT_FALSE(parse_scenario_override("novalue").is_ok());
  EXPECT_FALSE(parse_scenario_override("=3").is_ok());
  Result<ScenarioOverride> ok = parse_scenario_override("a.b=c=d");
  ASSERT_TRUE(ok.is_ok());
  EXPECT_EQ(ok->key, "a.b");
  EXPECT_EQ(ok->value, "c=d");
}

TEST_F(Composition, OverrideValuesAreTomlOrElseStrings) {
  const std::string path = write("s.toml", kWorkload);
  // A quoted number stays a string, so a size with units and a bare count both work;
  // an unbalanced quote is not TOML and is taken as text, then refused as a size.
  Scenario s = load_scenario_file(
      path, std::vector<ScenarioOverride>{{"workload.tensor[1].bytes", "\"2048\""}});
  EXPECT_EQ(elements_of(s, 1), 2048u);
  s = load_scenario_file(path, std::vector<ScenarioOverride>{{"workload.tensor[1].bytes", "4096"}});
  EXPECT_EQ(elements_of(s, 1), 4096u);
  EXPECT_NE(error_of(path, {{"workload.tensor[1].bytes", "\"12"}}).find("--set "),
            std::string::npos);
  // A value with a newline is one string, never a second key.
  s = load_scenario_file(path, std::vector<ScenarioOverride>{{"name", "x\nseed = 5"}});
  EXPECT_EQ(s.name, "x\nseed = 5");
  EXPECT_EQ(s.seed, 1u);
}

TEST_F(Composition, BytesIsAWholeNumberOfElementsAndExcludesShape) {
  Scenario s = load_scenario_file(write("s.toml", kWorkload));
  EXPECT_EQ(elements_of(s, 0), 4u);
  EXPECT_EQ(elements_of(s, 1), 3072u);
  s = load_scenario_file(write("f.toml", kWorkload),
                         std::vector<ScenarioOverride>{{"workload.tensor[1].dtype", "float64"}});
  EXPECT_EQ(elements_of(s, 1), 384u);
  const std::string p = write("t.toml", kWorkload);
  EXPECT_NE(error_of(p, {{"workload.tensor[1].bytes", "3"}, {"workload.tensor[1].dtype", "int32"}})
                .find("3 bytes is not a whole number of int32 elements (4 bytes each)"),
            std::string::npos);
  EXPECT_NE(error_of(p, {{"workload.tensor[0].bytes", "16"}}).find("give shape or bytes, not both"),
            std::string::npos);
  EXPECT_NE(error_of(p, {{"workload.tensor[1].dtype", "string"}}).find("bytes is for fixed-size"),
            std::string::npos);
}

}  // namespace
}  // namespace tensorwire
