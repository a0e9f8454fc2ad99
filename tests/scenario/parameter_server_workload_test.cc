// The generated parameter-server workload: phases, counts, names, placement.
#include "scenario/parameter_server_workload.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>

#include "scenario/model_file.h"
#include "scenario/scenario_loader.h"

namespace tensorwire {
namespace {

const std::string kRoot = TENSORWIRE_SOURCE_ROOT;

Model tiny_model() {
  return parse_model(
      "[[layer]]\nname = \"big\"\nvariables = [{ name = \"kernel\", shape = [100, 10] },"
      " { name = \"bias\", shape = [10] }]\n"
      "[[layer]]\nname = \"small\"\nvariables = [{ name = \"kernel\", shape = [10, 2] },"
      " { name = \"bias\", shape = [2] }]\n",
      "tiny.toml");
}

TEST(Placement, RoundRobinFollowsFileOrder) {
  Model m = tiny_model();
  EXPECT_EQ(place_variables(m, {4, 7}, VariablePlacement::kRoundRobin),
            (std::vector<RankId>{4, 7, 4, 7}));
}

TEST(Placement, BalancedGivesEachVariableToTheLeastLoadedShard) {
  Model m = tiny_model();
  // big/kernel (4000 B) -> 4; big/bias (40 B) -> 7; small/kernel (80 B) -> 7;
  // small/bias (8 B) -> 7 (7 holds 120 B, 4 holds 4000 B).
  EXPECT_EQ(place_variables(m, {4, 7}, VariablePlacement::kBalanced),
            (std::vector<RankId>{4, 7, 7, 7}));
}

TEST(ChangedShape, TogglesTheFirstDimension) {
  TensorShape s{{3, 4}};
  EXPECT_EQ(changed_shape(s, 0), s);
  EXPECT_EQ(changed_shape(s, 1).dims, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(changed_shape(s, 2), s);
  EXPECT_EQ(changed_shape(TensorShape{}, 1).dims, (std::vector<int64_t>{1}));
  // A variable already at the size limit shrinks instead of growing past it.
  EXPECT_EQ(changed_shape(s, 1, 12).dims, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(changed_shape(s, 1, 16).dims, (std::vector<int64_t>{4, 4}));
}

TEST(ParameterServerWorkload, EveryWorkerPullsAndPushesEveryVariable) {
  Model m = tiny_model();
  ParameterServerOptions o;
  o.steps = 3;
  o.ps_ranks = {0};
  o.worker_ranks = {1, 2, 3};
  o.compute_ns = 777;
  o.memory_of_rank = {MemoryPlace{}, MemoryPlace{MemoryKind::kDeviceGpuDirect, 0},
                      MemoryPlace{MemoryKind::kDeviceGpuDirect, 0},
                      MemoryPlace{MemoryKind::kDeviceNoGpuDirect, 1}};
  Workload w = make_parameter_server_workload(m, o);
  EXPECT_EQ(w.kind, "parameter_server");
  ASSERT_EQ(w.steps.size(), 3u);
  EXPECT_EQ(parameter_server_transfer_count(m, o), 3u * 2 * 3 * 4);
  for (size_t s = 0; s < w.steps.size(); ++s) {
    const WorkloadStep& step = w.steps[s];
    EXPECT_EQ(step.step_id, s + 1);
    ASSERT_EQ(step.phases.size(), 2u);
    EXPECT_EQ(step.phases[0].label, "pull");
    EXPECT_EQ(step.phases[0].compute_before_ns, 0);
    EXPECT_EQ(step.phases[1].label, "push");
    EXPECT_EQ(step.phases[1].compute_before_ns, 777);
    ASSERT_EQ(step.phases[0].transfers.size(), 3u * 4);
    ASSERT_EQ(step.phases[1].transfers.size(), 3u * 4);
    std::set<std::tuple<RankId, RankId, std::string>> keys;
    for (const auto& t : step.phases[0].transfers) {
      EXPECT_EQ(t.src, 0u);
      EXPECT_NE(t.dst, 0u);
      EXPECT_EQ(t.src_kind, MemoryKind::kHostPinned);
      EXPECT_EQ(t.dst_kind, o.memory_of_rank[t.dst].kind);
      EXPECT_EQ(t.dst_device, o.memory_of_rank[t.dst].device);
      EXPECT_NE(t.name.find("@w" + std::to_string(t.dst)), std::string::npos) << t.name;
      EXPECT_TRUE(keys.emplace(t.src, t.dst, t.name).second) << t.name;
    }
    for (const auto& t : step.phases[1].transfers) {
      EXPECT_EQ(t.dst, 0u);
      EXPECT_EQ(t.src_kind, o.memory_of_rank[t.src].kind);
      EXPECT_NE(t.name.find("/grad@w" + std::to_string(t.src)), std::string::npos) << t.name;
      EXPECT_TRUE(keys.emplace(t.src, t.dst, t.name).second) << t.name;
    }
    // A sender's names are unique within the step (its rendezvous table key).
    std::set<std::pair<RankId, std::string>> sent;
    for (const auto& phase : step.phases) {
      for (const auto& t : phase.transfers) EXPECT_TRUE(sent.emplace(t.src, t.name).second);
    }
  }
}

TEST(ParameterServerWorkload, MetaDataChangesToggleChosenVariables) {
  Model m = tiny_model();
  ParameterServerOptions o;
  o.steps = 4;
  o.ps_ranks = {0};
  o.worker_ranks = {1};
  o.memory_of_rank.assign(2, MemoryPlace{});
  o.meta_data_change_steps = {2, 4};
  o.meta_data_change_variables = {"small/bias"};
  Workload w = make_parameter_server_workload(m, o);
  auto shape_at = [&](size_t step, const std::string& name) {
    for (const auto& t : w.steps[step].phases[0].transfers) {
      if (t.name == name) return t.shape.dims;
    }
    return std::vector<int64_t>{-1};
  };
  EXPECT_EQ(shape_at(0, "small/bias@w1"), (std::vector<int64_t>{2}));
  EXPECT_EQ(shape_at(1, "small/bias@w1"), (std::vector<int64_t>{3}));
  EXPECT_EQ(shape_at(2, "small/bias@w1"), (std::vector<int64_t>{3}));
  EXPECT_EQ(shape_at(3, "small/bias@w1"), (std::vector<int64_t>{2}));
  for (size_t s = 0; s < 4; ++s)
    EXPECT_EQ(shape_at(s, "big/kernel@w1"), (std::vector<int64_t>{100, 10}));
  // Push gradients follow their variable.
  EXPECT_EQ(w.steps[1].phases[1].transfers[3].name, "small/bias/grad@w1");
  EXPECT_EQ(w.steps[1].phases[1].transfers[3].shape.dims, (std::vector<int64_t>{3}));
}

TEST(ParameterServerScenario, Vgg16On8x4HasWorkersTimesVariablesPerPhase) {
  Scenario s = load_scenario_file(kRoot + "/scenarios/vgg16_8x4.toml");
  EXPECT_FALSE(s.payload);
  EXPECT_EQ(s.cluster.nodes, 8u);
  EXPECT_EQ(s.cluster.gpus_per_node, 4u);
  ASSERT_GE(s.workload.steps.size(), 2u);
  for (const auto& step : s.workload.steps) {
    ASSERT_EQ(step.phases.size(), 2u);
    for (const auto& phase : step.phases) {
      EXPECT_EQ(phase.transfers.size(), 6u * 32);
      uint64_t bytes = 0;
      std::map<RankId, uint64_t> per_ps;
      for (const auto& t : phase.transfers) {
        bytes += t.shape.num_elements().value() * 4;
        RankId ps = phase.label == "pull" ? t.src : t.dst;
        RankId worker = phase.label == "pull" ? t.dst : t.src;
        EXPECT_TRUE(ps == 0 || ps == 1) << t.name;
        EXPECT_GE(worker, 2u);
        per_ps[ps] += 1;
        const MemoryKind worker_kind = phase.label == "pull" ? t.dst_kind : t.src_kind;
        const MemoryKind ps_kind = phase.label == "pull" ? t.src_kind : t.dst_kind;
        EXPECT_EQ(worker_kind, MemoryKind::kDeviceGpuDirect);
        EXPECT_EQ(ps_kind, MemoryKind::kHostPinned);
      }
      EXPECT_EQ(bytes, 6u * 138357544u * 4);
      EXPECT_EQ(per_ps[0], 6u * 16);  // round robin: 16 variables each
      EXPECT_EQ(per_ps[1], 6u * 16);
    }
    EXPECT_GT(step.phases[1].compute_before_ns, 0);
  }
}

TEST(ParameterServerScenario, ResNet50WithBalancedShardsAndAMixedGpuDirectCluster) {
  Scenario s = load_scenario_file(kRoot + "/scenarios/resnet50_ps.toml");
  ASSERT_EQ(s.workload.steps.size(), 4u);
  const auto& pull = s.workload.steps[0].phases[0];
  EXPECT_EQ(pull.transfers.size(), 4u * 161);  // 4 workers (all but the 2 PS ranks)
  // Nodes 4 and 5 lack GPUDirect on gpu1 only; workers use gpu0 everywhere.
  for (const auto& t : pull.transfers) EXPECT_EQ(t.dst_kind, MemoryKind::kDeviceGpuDirect);
  // Only the classifier changes at step 3.
  size_t changed = 0;
  const auto& before = s.workload.steps[1].phases[0].transfers;
  const auto& after = s.workload.steps[2].phases[0].transfers;
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    if (!(before[i].shape == after[i].shape)) {
      ++changed;
      EXPECT_EQ(after[i].name.rfind("predictions/", 0), 0u) << after[i].name;
    }
  }
  EXPECT_EQ(changed, 4u * 2);
}

}  // namespace
}  // namespace tensorwire
