// channels = "workload" | "all" (core/channel_peers.h) for every point-to-point
// protocol that has it: on a parameter-server pattern a rank opens channels
// only to the ranks it exchanges tensors with, and delivers the same tensors,
// each checked byte for byte (payload mode), as with a channel to every rank.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backend_sim/simulator.h"
#include "core/trace_sink.h"
#include "core/workload/peer_sets.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire {
namespace {

constexpr uint32_t kRanks = 6;  // ranks 0 and 1 serve workers 2..5

// A worker pulls a small and a long variable from its server (rank w % 2)
// and pushes a gradient of each to both servers: servers never talk to each
// other, workers never to workers.
std::string ps_scenario(const std::string& protocol, const std::string& channels) {
  std::string s = "[run]\nmode = \"payload\"\n[cluster]\nnodes = " + std::to_string(kRanks) +
                  "\ngpus_per_node = 1\ngpu_direct = true\n[protocol]\nname = \"" + protocol +
                  "\"\n[protocol." + protocol + "]\nchannels = \"" + channels +
                  "\"\n[workload]\nkind = \"tensors\"\nsteps = 2\n";
  auto tensor = [&s](const std::string& name, RankId src, RankId dst, uint32_t elements,
                     const char* order) {
    s += "[[workload.tensor]]\nname = \"" + name + "\"\nsrc = " + std::to_string(src) +
         "\ndst = " + std::to_string(dst) + "\ndtype = \"float32\"\nshape = [" +
         std::to_string(elements) + "]\nsrc_memory = \"host\"\ndst_memory = \"gpu0\"\norder = \"" +
         order + "\"\n";
  };
  for (RankId w = 2; w < kRanks; ++w) {
    const std::string at = "@w" + std::to_string(w);
    tensor("small" + at, w % 2, w, 256, "recv_first");          // 1 KiB: eager where there is one
    tensor("long" + at, w % 2, w, 64 * 1024, "send_first");     // 256 KiB: rendezvous
    for (RankId server = 0; server < 2; ++server) {
      const std::string grad = "/grad" + at + "_ps" + std::to_string(server);
      tensor("small" + grad, w, server, 256, "same_time");
      tensor("long" + grad, w, server, 64 * 1024, "recv_first");
    }
  }
  return s;
}

RunReport run_ps(const std::string& protocol, const std::string& channels) {
  const Scenario scenario = load_scenario_string(ps_scenario(protocol, channels), "ps_channels.toml");
  NullTraceSink trace;
  return run_simulation(scenario, SimulationOptions{}, trace);
}

// (step, name, src, dst) of every transfer delivered and checked equal to what was sent.
std::set<std::tuple<uint64_t, std::string, RankId, RankId>> verified_transfers(const RunReport& r) {
  std::set<std::tuple<uint64_t, std::string, RankId, RankId>> out;
  for (const StepResult& step : r.workload.steps) {
    for (const TransferResult& t : step.transfers) {
      if (t.done && t.status.is_ok() && t.verified) out.emplace(t.step_id, t.name, t.src, t.dst);
    }
  }
  return out;
}

uint32_t workload_peers(RankId r) { return r < 2 ? kRanks - 2 : 2; }

class WorkloadChannels : public ::testing::TestWithParam<std::string> {};

TEST_P(WorkloadChannels, OpenOnlyThePairsThatTalkAndDeliverTheSameBytes) {
  const RunReport all = run_ps(GetParam(), "all");
  const RunReport used = run_ps(GetParam(), "workload");
  ASSERT_TRUE(all.passed()) << problem_lines(all.problems);
  ASSERT_TRUE(used.passed()) << problem_lines(used.problems);
  ASSERT_TRUE(all.workload.finished);
  ASSERT_TRUE(used.workload.finished);
  const auto delivered = verified_transfers(all);
  EXPECT_EQ(delivered.size(), 2u * (kRanks - 2) * 6) << "every transfer of both steps, checked";
  EXPECT_EQ(verified_transfers(used), delivered);

  ASSERT_EQ(all.rank_stats.size(), kRanks);
  ASSERT_EQ(used.rank_stats.size(), kRanks);
  // A channel's start-up registrations (its receive ring or pools) are the same
  // for every peer, so what "workload" saves on a rank is that much per rank
  // it opens no channel to: 1 on a server (the other server), 3 on a worker.
  const TransportStats& server_all = all.rank_stats[0];
  const TransportStats& server_used = used.rank_stats[0];
  ASSERT_GT(server_all.registrations, server_used.registrations)
      << "a server opens no channel to the other server";
  const uint64_t per_channel = server_all.registrations - server_used.registrations;
  const uint64_t per_channel_bytes = server_all.registered_bytes - server_used.registered_bytes;
  // What a channel sends at start (the legacy protocol's address exchange; 0 elsewhere).
  const uint64_t per_channel_wire = server_all.bytes_on_wire_tx - server_used.bytes_on_wire_tx;
  for (RankId r = 0; r < kRanks; ++r) {
    const uint64_t unopened = (kRanks - 1) - workload_peers(r);
    EXPECT_EQ(all.rank_stats[r].registrations - used.rank_stats[r].registrations,
              unopened * per_channel)
        << "rank " << r;
    EXPECT_EQ(all.rank_stats[r].registered_bytes - used.rank_stats[r].registered_bytes,
              unopened * per_channel_bytes)
        << "rank " << r;
    // The tensors take the same way either way.
    EXPECT_EQ(all.rank_stats[r].bytes_on_wire_tx - used.rank_stats[r].bytes_on_wire_tx,
              unopened * per_channel_wire)
        << "rank " << r;
    EXPECT_EQ(used.rank_stats[r].rdma_reads + used.rank_stats[r].rdma_writes +
                  used.rank_stats[r].rdma_writes_with_imm,
              all.rank_stats[r].rdma_reads + all.rank_stats[r].rdma_writes +
                  all.rank_stats[r].rdma_writes_with_imm)
        << "rank " << r;
  }
}

TEST_P(WorkloadChannels, AnUnknownSettingIsRejectedNamingTheFileAndKey) {
  try {
    run_ps(GetParam(), "some");
    FAIL() << "channels = \"some\" loaded";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ps_channels.toml:"), std::string::npos) << what;
    EXPECT_NE(what.find("channels"), std::string::npos) << what;
    EXPECT_NE(what.find("\"workload\""), std::string::npos) << what;
    EXPECT_NE(what.find("\"some\""), std::string::npos) << what;
  }
}

// The runner never asks for it (a pair in the workload is in both ranks' sets),
// but a caller that does gets an error naming the rank, not an assertion.
TEST_P(WorkloadChannels, ARecvFromARankWithoutAChannelFailsNamingIt) {
  const Scenario scenario =
      load_scenario_string(ps_scenario(GetParam(), "workload"), "ps_channels.toml");
  Result<std::vector<std::vector<RankId>>> peers = peer_sets_of(scenario.workload, kRanks);
  ASSERT_TRUE(peers.is_ok()) << peers.status().to_string();
  ASSERT_EQ((*peers)[2], (std::vector<RankId>{0, 1}));
  NullTraceSink trace;
  sim::Simulator simulator(scenario.cluster, {}, trace);
  std::vector<RankEnv> envs;
  std::vector<std::unique_ptr<Rendezvous>> ranks;
  for (RankId r = 0; r < kRanks; ++r) {
    envs.push_back(simulator.env(r));
    envs.back().peers = &(*peers)[r];
    ranks.push_back(scenario.protocol.descriptor().make_rendezvous(envs.back(),
                                                                   scenario.protocol.options));
  }
  for (auto& rank : ranks) ASSERT_TRUE(rank->start().is_ok());
  std::optional<Status> got;
  ranks[2]->recv(3, "small@w3", 1, RecvArgs{}, [&got](Status st, Tensor) { got = st; });
  simulator.run();
  ASSERT_TRUE(got.has_value()) << "the Recv ends";
  EXPECT_EQ(got->code(), StatusCode::kInvalidArgument) << got->to_string();
  EXPECT_NE(got->to_string().find("rank 3"), std::string::npos) << got->to_string();
  EXPECT_NE(got->to_string().find("no channel"), std::string::npos) << got->to_string();
}

INSTANTIATE_TEST_SUITE_P(PointToPoint, WorkloadChannels,
                         ::testing::Values("oneflow_commnet", "mvapich2_gpu", "tf_verbs_legacy",
                                           "tf_verbs_zero_copy"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace tensorwire
