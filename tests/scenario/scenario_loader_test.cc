// Loading valid scenarios: the shipped files, defaults, memory kinds, orders,
// meta-data changes, model lookup.
#include "scenario/scenario_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_protocol.h"

namespace tensorwire {
namespace {

const std::string kRoot = TENSORWIRE_SOURCE_ROOT;

Scenario load(const std::string& text, const std::string& base_dir = "") {
  return load_scenario_string(text, "dir/test_scenario.toml", base_dir);
}

const TensorTransfer& transfer(const Scenario& s, size_t step, const std::string& name) {
  for (const auto& phase : s.workload.steps.at(step).phases) {
    for (const auto& t : phase.transfers) {
      if (t.name == name) return t;
    }
  }
  throw std::runtime_error("no transfer " + name);
}

class ShippedScenario : public ::testing::TestWithParam<const char*> {};

TEST_P(ShippedScenario, LoadsAndFitsItsCluster) {
  Scenario s = load_scenario_file(kRoot + "/scenarios/" + GetParam());
  EXPECT_FALSE(s.name.empty());
  EXPECT_FALSE(s.description.empty());
  EXPECT_EQ(s.protocol.name, "tf_verbs_zero_copy");
  ASSERT_FALSE(s.workload.steps.empty());
  uint64_t previous_step_id = 0;
  for (const auto& step : s.workload.steps) {
    EXPECT_GT(step.step_id, previous_step_id);
    previous_step_id = step.step_id;
    for (const auto& phase : step.phases) {
      EXPECT_FALSE(phase.transfers.empty());
      for (const auto& t : phase.transfers) {
        EXPECT_LT(t.src, s.cluster.nodes);
        EXPECT_LT(t.dst, s.cluster.nodes);
        EXPECT_NE(t.src, t.dst);
        if (is_device(t.src_kind)) {
          EXPECT_LT(t.src_device, s.cluster.gpus_per_node);
        }
        if (is_device(t.dst_kind)) {
          EXPECT_LT(t.dst_device, s.cluster.gpus_per_node);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, ShippedScenario,
                         ::testing::Values("quickstart.toml", "vgg16_8x4.toml",
                                           "meta_data_change.toml", "string_tensors.toml",
                                           "gpu_no_direct.toml", "resnet50_ps.toml",
                                           "vgg16_leaf_spine.toml", "vgg16_rail.toml",
                                           "all_to_all_leaf_spine.toml"),
                         [](const auto& info) {
                           std::string n = info.param;
                           return n.substr(0, n.find('.'));
                         });

TEST(DefaultScenario, IsTheQuickstartAndIsSmall) {
  EXPECT_EQ(default_scenario_path(), kRoot + "/scenarios/quickstart.toml");
  Scenario s = load_scenario_file(default_scenario_path());
  EXPECT_EQ(s.name, "quickstart");
  EXPECT_EQ(s.seed, 42u);
  EXPECT_TRUE(s.payload);
  EXPECT_EQ(s.cluster.nodes, 2u);
  EXPECT_EQ(s.cluster.gpus_per_node, 2u);
  EXPECT_DOUBLE_EQ(s.cluster.nic_bandwidth_bytes_per_s, 12.5e9);
  EXPECT_EQ(s.cluster.nic_latency_ns, 1500);
  EXPECT_EQ(s.workload.kind, "tensors");
  ASSERT_EQ(s.workload.steps.size(), 3u);
  EXPECT_EQ(s.workload.steps[0].phases.at(0).compute_before_ns, 100000);
  uint64_t bytes = 0;
  for (const auto& t : s.workload.steps[0].phases[0].transfers) {
    bytes += t.shape.num_elements().value() * data_type_size(t.dtype);
  }
  EXPECT_LT(bytes, 16u << 20);
  // Steady state at the end: the last two steps carry the same meta-data.
  const auto& a = s.workload.steps[1].phases[0].transfers;
  const auto& b = s.workload.steps[2].phases[0].transfers;
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].shape, b[i].shape);
    EXPECT_EQ(a[i].dtype, b[i].dtype);
  }
}

TEST(Loader, DefaultsForEverythingOptional) {
  Scenario s = load(
      "[workload]\nkind = \"tensors\"\nsteps = 1\n"
      "[[workload.tensor]]\nname = \"x\"\nsrc = 0\ndst = 1\n");
  EXPECT_EQ(s.name, "test_scenario");  // the file stem
  EXPECT_EQ(s.source_path, "dir/test_scenario.toml");
  EXPECT_EQ(s.seed, 1u);
  EXPECT_TRUE(s.payload);
  Cluster defaults;
  EXPECT_EQ(s.cluster.nodes, defaults.nodes);
  EXPECT_EQ(s.cluster.send_queue_depth, defaults.send_queue_depth);
  EXPECT_EQ(tf_verbs::options_of(s.protocol.options).control_ring_size, tf_verbs::TfVerbsOptions{}.control_ring_size);
  const TensorTransfer& t = transfer(s, 0, "x");
  EXPECT_EQ(t.dtype, DataType::kFloat32);
  EXPECT_TRUE(t.shape.dims.empty());  // a scalar
  EXPECT_EQ(t.src_kind, MemoryKind::kHostPinned);
  EXPECT_EQ(t.dst_kind, MemoryKind::kHostPinned);
  EXPECT_FALSE(t.is_dead);
  EXPECT_EQ(t.recv_offset_ns, 0);  // recv_first by default
  EXPECT_GT(t.send_offset_ns, 0);
  EXPECT_EQ(s.workload.steps[0].step_id, 1u);
}

TEST(Loader, EveryClusterAndProtocolKey) {
  Scenario s = load(R"(
seed = 99
[run]
mode = "timing"
[cluster]
nodes = 3
gpus_per_node = 1
gpu_direct = false
nic_bandwidth = "25GB/s"
nic_latency = "700ns"
pcie_bandwidth = "16GiB/s"
pcie_latency = "2us"
host_memcpy_bandwidth = "8GB/s"
registration_base = "3us"
registration_per_page = "40ns"
send_queue_depth = 16
rnr_delay = "20us"
rnr_retry_count = 3
[protocol]
name = "tf_verbs_zero_copy"
[protocol.tf_verbs_zero_copy]
control_ring_size = 8
request_timeout = "2ms"
[workload]
kind = "tensors"
steps = 1
[[workload.tensor]]
name = "x"
src = 2
dst = 0
dst_memory = "gpu0"
)");
  EXPECT_EQ(s.seed, 99u);
  EXPECT_FALSE(s.payload);
  EXPECT_EQ(s.cluster.nodes, 3u);
  ASSERT_EQ(s.cluster.gpu_direct.size(), 3u);
  EXPECT_FALSE(s.cluster.gpu_direct[2][0]);
  EXPECT_DOUBLE_EQ(s.cluster.nic_bandwidth_bytes_per_s, 25e9);
  EXPECT_EQ(s.cluster.nic_latency_ns, 700);
  EXPECT_DOUBLE_EQ(s.cluster.pcie_bandwidth_bytes_per_s, 16.0 * (1ull << 30));
  EXPECT_EQ(s.cluster.pcie_latency_ns, 2000);
  EXPECT_DOUBLE_EQ(s.cluster.host_memcpy_bandwidth_bytes_per_s, 8e9);
  EXPECT_EQ(s.cluster.registration_base_ns, 3000);
  EXPECT_EQ(s.cluster.registration_per_page_ns, 40);
  EXPECT_EQ(s.cluster.send_queue_depth, 16u);
  EXPECT_EQ(s.cluster.rnr_delay_ns, 20000);
  EXPECT_EQ(s.cluster.rnr_retry_count, 3u);
  EXPECT_EQ(tf_verbs::options_of(s.protocol.options).control_ring_size, 8u);
  EXPECT_EQ(tf_verbs::options_of(s.protocol.options).request_timeout_ns, 2000000);
  EXPECT_EQ(transfer(s, 0, "x").dst_kind, MemoryKind::kDeviceNoGpuDirect);
}

TEST(Loader, MemoryKindsFollowGpuDirectPerNodeAndGpu) {
  Scenario s = load(R"(
[cluster]
nodes = 2
gpus_per_node = 2
gpu_direct = [[true, false], true]
[workload]
kind = "tensors"
steps = 1
[[workload.tensor]]
name = "a"
src = 0
dst = 1
src_memory = "gpu1"
dst_memory = "gpu1"
[[workload.tensor]]
name = "b"
src = 0
dst = 1
src_memory = "gpu0"
dst_memory = "host_pageable"
[[workload.tensor]]
name = "c"
src = 1
dst = 0
src_memory = "host_pinned"
dst_memory = "gpu1"
)");
  const TensorTransfer& a = transfer(s, 0, "a");
  EXPECT_EQ(a.src_kind, MemoryKind::kDeviceNoGpuDirect);
  EXPECT_EQ(a.src_device, 1u);
  EXPECT_EQ(a.dst_kind, MemoryKind::kDeviceGpuDirect);
  EXPECT_EQ(a.dst_device, 1u);
  EXPECT_EQ(transfer(s, 0, "b").src_kind, MemoryKind::kDeviceGpuDirect);
  EXPECT_EQ(transfer(s, 0, "b").dst_kind, MemoryKind::kHostPageable);
  EXPECT_EQ(transfer(s, 0, "c").src_kind, MemoryKind::kHostPinned);
  EXPECT_EQ(transfer(s, 0, "c").dst_kind, MemoryKind::kDeviceNoGpuDirect);
}

TEST(Loader, OrderAndExplicitOffsets) {
  Scenario s = load(R"(
[workload]
kind = "tensors"
steps = 1
[[workload.tensor]]
name = "r"
src = 0
dst = 1
order = "recv_first"
[[workload.tensor]]
name = "s"
src = 0
dst = 1
order = "send_first"
[[workload.tensor]]
name = "t"
src = 0
dst = 1
order = "same_time"
[[workload.tensor]]
name = "u"
src = 0
dst = 1
send_offset = "3us"
recv_offset = "10us"
)");
  EXPECT_LT(transfer(s, 0, "r").recv_offset_ns, transfer(s, 0, "r").send_offset_ns);
  EXPECT_LT(transfer(s, 0, "s").send_offset_ns, transfer(s, 0, "s").recv_offset_ns);
  EXPECT_EQ(transfer(s, 0, "t").send_offset_ns, transfer(s, 0, "t").recv_offset_ns);
  EXPECT_EQ(transfer(s, 0, "u").send_offset_ns, 3000);
  EXPECT_EQ(transfer(s, 0, "u").recv_offset_ns, 10000);
}

TEST(Loader, ChangesHoldFromTheirStepOn) {
  Scenario s = load(R"(
[workload]
kind = "tensors"
steps = 5
compute = "1ms"
[[workload.tensor]]
name = "x"
src = 0
dst = 1
shape = [2, 3]
[[workload.tensor]]
name = "y"
src = 1
dst = 0
dtype = "string"
shape = [4]
[[workload.change]]
step = 2
tensor = "x"
shape = [5, 3]
dtype = "int32"
[[workload.change]]
step = 3
tensor = "x"
dead = true
[[workload.change]]
step = 4
tensor = "x"
dead = false
shape = [0, 3]
[[workload.change]]
step = 3
tensor = "y"
string_bytes = "1KiB"
[[workload.change]]
step = 5
tensor = "y"
dtype = "uint8"
)");
  ASSERT_EQ(s.workload.steps.size(), 5u);
  EXPECT_EQ(transfer(s, 0, "x").shape.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(transfer(s, 0, "x").dtype, DataType::kFloat32);
  EXPECT_EQ(transfer(s, 1, "x").shape.dims, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(transfer(s, 1, "x").dtype, DataType::kInt32);
  EXPECT_FALSE(transfer(s, 1, "x").is_dead);
  EXPECT_TRUE(transfer(s, 2, "x").is_dead);
  EXPECT_EQ(transfer(s, 2, "x").dtype, DataType::kInt32);  // earlier change persists
  EXPECT_FALSE(transfer(s, 3, "x").is_dead);
  EXPECT_EQ(transfer(s, 3, "x").shape.dims, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(transfer(s, 4, "x").shape.dims, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(transfer(s, 0, "y").string_bytes, 16u);  // the default
  EXPECT_EQ(transfer(s, 1, "y").string_bytes, 16u);
  EXPECT_EQ(transfer(s, 2, "y").string_bytes, 1024u);
  EXPECT_EQ(transfer(s, 4, "y").dtype, DataType::kUInt8);
  EXPECT_EQ(transfer(s, 4, "y").string_bytes, 0u);
  for (const auto& step : s.workload.steps) {
    ASSERT_EQ(step.phases.size(), 1u);
    EXPECT_EQ(step.phases[0].label, "tensors");
    EXPECT_EQ(step.phases[0].compute_before_ns, 1000000);
  }
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tensorwire_scenario_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "models");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::filesystem::path& relative, const std::string& text) {
    std::ofstream(dir_ / relative) << text;
  }
  std::filesystem::path dir_;
};

constexpr const char* kPsScenario = R"(
[cluster]
nodes = 3
[workload]
kind = "parameter_server"
model = "%MODEL%"
steps = 1
ps_ranks = [0]
)";

std::string with_model(const std::string& model) {
  std::string text = kPsScenario;
  text.replace(text.find("%MODEL%"), 7, model);
  return text;
}

TEST_F(TempDir, ModelNameIsLookedUpNextToTheScenarioFirst) {
  write("models/vgg16.toml",
        "[[layer]]\nname = \"only\"\nvariables = [{ name = \"k\", shape = [3] }]\n");
  write("ps.toml", with_model("vgg16"));
  Scenario s = load_scenario_file((dir_ / "ps.toml").string());
  ASSERT_EQ(s.workload.steps.size(), 1u);
  EXPECT_EQ(s.workload.steps[0].phases[0].transfers.size(), 2u);  // 1 variable x 2 workers
  EXPECT_EQ(s.workload.steps[0].phases[0].transfers[0].name, "only/k@w1");
  // Workers default to host memory on a cluster without GPUs.
  EXPECT_EQ(s.workload.steps[0].phases[0].transfers[0].dst_kind, MemoryKind::kHostPinned);
}

TEST_F(TempDir, ModelNameFallsBackToTheShippedModels) {
  write("ps.toml", with_model("resnet50"));
  Scenario s = load_scenario_file((dir_ / "ps.toml").string());
  EXPECT_EQ(s.workload.steps[0].phases[0].transfers.size(), 2u * 161);
}

TEST_F(TempDir, ModelPathIsRelativeToTheScenario) {
  write("mine.toml", "[[layer]]\nname = \"l\"\nvariables = [{ name = \"k\", shape = [3] }]\n");
  write("ps.toml", with_model("mine.toml"));
  Scenario s = load_scenario_file((dir_ / "ps.toml").string());
  EXPECT_EQ(s.workload.steps[0].phases[1].transfers[1].name, "l/k/grad@w2");
  // The same text loaded from a string resolves against base_dir.
  Scenario t = load_scenario_string(with_model("mine.toml"), "x.toml", dir_.string());
  EXPECT_EQ(t.workload.steps[0].phases[0].transfers.size(), 2u);
}

}  // namespace
}  // namespace tensorwire
