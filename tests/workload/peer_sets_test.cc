// Each rank's peers from the workload (core/workload/peer_sets.h), and the
// TF zero-copy protocol's channels = "workload", which opens channels only to
// them: fewer registrations and queue pairs, the same delivered tensors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/trace_sink.h"
#include "core/workload/peer_sets.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire {
namespace {

const std::string kRoot = TENSORWIRE_SOURCE_ROOT;

TensorTransfer transfer(RankId src, RankId dst) {
  TensorTransfer t;
  t.name = "t" + std::to_string(src) + "_" + std::to_string(dst);
  t.src = src;
  t.dst = dst;
  return t;
}

Workload workload_of(std::vector<std::vector<TensorTransfer>> phases) {
  Workload w;
  w.steps.emplace_back();
  for (auto& transfers : phases) w.steps.back().phases.push_back({"p", 0, std::move(transfers)});
  return w;
}

TEST(PeerSets, ParameterServerWorkersSeeOnlyTheServersAndPairsAreSymmetric) {
  // Ranks 0 and 1 serve ranks 2..4: pull (server -> worker), push (worker -> server).
  std::vector<TensorTransfer> pull, push;
  for (RankId w = 2; w < 5; ++w) {
    pull.push_back(transfer(w % 2, w));
    push.push_back(transfer(w, 0));
    push.push_back(transfer(w, 1));
  }
  Result<std::vector<std::vector<RankId>>> peers = peer_sets_of(workload_of({pull, push}), 6);
  ASSERT_TRUE(peers.is_ok()) << peers.status().to_string();
  const std::vector<std::vector<RankId>> want = {{2, 3, 4}, {2, 3, 4}, {0, 1}, {0, 1}, {0, 1}, {}};
  EXPECT_EQ(*peers, want);
}

TEST(PeerSets, SortedWhateverTheTransferOrderAndWithoutSelf) {
  Result<std::vector<std::vector<RankId>>> peers =
      peer_sets_of(workload_of({{transfer(0, 3), transfer(2, 2), transfer(0, 1), transfer(3, 0)}}), 4);
  ASSERT_TRUE(peers.is_ok());
  EXPECT_EQ((*peers)[0], (std::vector<RankId>{1, 3}));
  EXPECT_TRUE((*peers)[2].empty()) << "a rank sending to itself needs no peer";
  EXPECT_EQ((*peers)[3], (std::vector<RankId>{0}));
}

TEST(PeerSets, ARankOutsideTheClusterIsAnErrorNamingTheTensor) {
  Result<std::vector<std::vector<RankId>>> peers =
      peer_sets_of(workload_of({{transfer(0, 1), transfer(1, 7)}}), 4);
  ASSERT_FALSE(peers.is_ok());
  EXPECT_NE(peers.status().message().find("tensor 't1_7'"), std::string::npos)
      << peers.status().message();
  EXPECT_NE(peers.status().message().find("rank 7"), std::string::npos);
}

RunReport run_vgg16_8x4(const std::string& channels) {
  std::vector<ScenarioOverride> overrides;
  overrides.push_back(*parse_scenario_override("protocol.tf_verbs_zero_copy.channels=" + channels));
  overrides.push_back(*parse_scenario_override("workload.steps=2"));
  const Scenario scenario =
      load_scenario_file(kRoot + "/scenarios/vgg16_8x4.toml", overrides);
  SimulationOptions options;
  NullTraceSink trace;
  return run_simulation(scenario, options, trace);
}

// vgg16_8x4: ranks 0 and 1 serve workers 2..7; the servers never talk to each
// other, nor the workers.
TEST(TfVerbsWorkloadChannels, OpenOnlyTheWorkloadsPairsAndDeliverTheSame) {
  const RunReport all = run_vgg16_8x4("all");
  const RunReport used = run_vgg16_8x4("workload");
  ASSERT_TRUE(all.passed()) << problem_lines(all.problems);
  ASSERT_TRUE(used.passed()) << problem_lines(used.problems);
  ASSERT_EQ(all.rank_stats.size(), 8u);
  ASSERT_EQ(used.rank_stats.size(), 8u);
  // A channel registers its ring and one chunk of message buffers at start.
  for (RankId r = 0; r < 2; ++r) {
    EXPECT_EQ(used.rank_stats[r].registrations + 2 * 1, all.rank_stats[r].registrations)
        << "a server talks to every worker, not to the other server";
  }
  for (RankId r = 2; r < 8; ++r) {
    EXPECT_EQ(used.rank_stats[r].registrations + 2 * 5, all.rank_stats[r].registrations)
        << "rank " << r << " opens no channel to the five other workers";
  }
  EXPECT_EQ(used.workload.steps.size(), all.workload.steps.size());
  EXPECT_EQ(used.total_stats.bytes_on_wire_tx, all.total_stats.bytes_on_wire_tx);
  // Fewer start-up registrations: the first step starts sooner, never later.
  EXPECT_LE(used.end_ns, all.end_ns);
}

TEST(TfVerbsWorkloadChannels, AnUnknownSettingIsRejectedNamingTheKey) {
  try {
    run_vgg16_8x4("some");
    FAIL() << "channels = \"some\" loaded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("channels"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"workload\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tensorwire
