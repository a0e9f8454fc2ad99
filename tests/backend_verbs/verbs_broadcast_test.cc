// Realm's collective broadcast on a real RDMA device, one process (here: one
// thread with its own coordinator, NIC and memory) per rank: each rank runs and
// checks its own part (its instances, its destinations' bytes), the ranks
// all-gather their parts, and every rank reports the whole broadcast as the
// simulator does; and through `tensorwire launch` as real processes, whose
// results `tensorwire compare` reads beside the simulator's. GPU memory is
// host memory standing in (--gpu-as-host). Skips without a device.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend_verbs/cuda_memory.h"
#include "runner/simulation_run.h"
#include "runner/verbs_run.h"
#include "scenario/scenario_loader.h"
#include "tests/backend_verbs/verbs_cluster.h"

namespace tensorwire {
namespace {

using std::chrono::milliseconds;

const std::string kRoot = TENSORWIRE_SOURCE_ROOT;

Scenario load(const std::string& relative) { return load_scenario_file(kRoot + "/" + relative); }

std::string all_problems(const RunReport& r) {
  std::string s;
  for (const Problem& p : r.problems) s += "  " + problem_line(p) + "\n";
  return s;
}

// Every rank of `scenario` as a thread of this process, GPUs as host memory;
// `tweak` adjusts one rank's options.
std::vector<Result<VerbsRunReport>> run_ranks(
    const Scenario& scenario, uint32_t world,
    const std::function<void(RankId, VerbsRunOptions&)>& tweak = {}) {
  std::vector<std::unique_ptr<launch::TcpCoordinator>> cs(world);
  const auto make = [world](const std::string& address, RankId r) {
    Result<std::unique_ptr<launch::TcpCoordinator>> c =
        launch::TcpCoordinator::create({address, r, world, milliseconds(30000)});
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    return std::move(c).value();
  };
  cs[0] = make("127.0.0.1:0", 0);
  const std::string address = "127.0.0.1:" + std::to_string(cs[0]->port());
  for (RankId r = 1; r < world; ++r) cs[r] = make(address, r);
  std::vector<Result<VerbsRunReport>> results(world, Status(StatusCode::kInternal, "not run"));
  std::vector<std::thread> threads;
  for (RankId r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      VerbsRunOptions o;
      o.rank = r;
      o.world = world;
      o.device = std::getenv("TENSORWIRE_RDMA_DEVICE");
      o.address = std::getenv("TENSORWIRE_RDMA_ADDR");
      o.gpu_as_host = true;
      o.setup_timeout = milliseconds(30000);
      o.phase_timeout = milliseconds(30000);
      if (tweak) tweak(r, o);
      NullTraceSink no_trace;
      results[r] = run_verbs_rank(scenario, o, *cs[r], no_trace);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

nlohmann::ordered_json account_json(const RunReport& report) {
  nlohmann::ordered_json j;
  if (report.collective) report.collective->add_results(j, report.workload_kind);
  return j;
}

// Every rank passed and reports the whole broadcast: the simulator's plan and
// destinations, each one complete (and, since a rank checks its own
// destinations' bytes and a wrong byte is a problem, byte-exact), every
// rank's counters and transport, and the bytes moved by RDMA.
void expect_broadcast_passes_like_the_simulator(const std::string& path, uint32_t world) {
  Scenario scenario = load(path);
  NullTraceSink trace;
  const RunReport sim = run_simulation(scenario, {}, trace);
  ASSERT_TRUE(sim.passed()) << all_problems(sim);
  const nlohmann::ordered_json sim_account = account_json(sim);
  std::vector<Result<VerbsRunReport>> results = run_ranks(scenario, world);
  for (RankId r = 0; r < world; ++r) {
    ASSERT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].status().to_string();
    const VerbsRunReport& v = *results[r];
    EXPECT_TRUE(v.whole_run) << "rank " << r;
    EXPECT_TRUE(v.report.passed()) << "rank " << r << ":\n" << all_problems(v.report);
    EXPECT_EQ(v.report.backend, "verbs");
    ASSERT_NE(v.report.collective, nullptr) << "rank " << r;
    EXPECT_EQ(v.report.protocol_counters.size(), world);
    ASSERT_EQ(v.report.rank_stats.size(), world);
    EXPECT_GT(v.report.total_stats.rdma_writes_with_imm, 0u) << "the bytes crossed the network";
    EXPECT_GT(counter_total(v.report.protocol_counters[0], CounterRole::kContentTransfer) +
                  counter_total(v.report.protocol_counters[1], CounterRole::kContentTransfer),
              0u);
    const nlohmann::ordered_json j = account_json(v.report);
    EXPECT_EQ(j["plan"], sim_account["plan"]) << "rank " << r;
    EXPECT_EQ(j["workload"]["finished"], true) << "rank " << r;
    ASSERT_EQ(j["destinations"].size(), sim_account["destinations"].size());
    for (size_t d = 0; d < j["destinations"].size(); ++d) {
      EXPECT_EQ(j["destinations"][d]["memory"], sim_account["destinations"][d]["memory"]);
      EXPECT_GE(j["destinations"][d]["done_ns"].get<int64_t>(), 0)
          << "rank " << r << ": " << j["destinations"][d]["memory"];
    }
    EXPECT_EQ(j["links"], sim_account["links"]) << "the plan's bytes per link";
  }
}

TEST(VerbsBroadcast, TwoRanksOfTwoGpusDeliverEveryDestinationByteExact) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  expect_broadcast_passes_like_the_simulator("tests/backend_verbs/scenarios/broadcast_2ranks.toml", 2);
}

TEST(VerbsBroadcast, FourRanksOfThreeGpusThroughARadixTreeDeliverEveryDestinationByteExact) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  expect_broadcast_passes_like_the_simulator("tests/backend_verbs/scenarios/broadcast_4ranks.toml", 4);
}

TEST(VerbsBroadcast, ThreeRanksThroughAPipelinedChainClosedIntoWindowsDeliverEveryByte) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  expect_broadcast_passes_like_the_simulator("tests/backend_verbs/scenarios/broadcast_chain_3ranks.toml", 3);
}

// Without --gpu-as-host and without the GPUs, the broadcast is refused before
// anything connects, naming the field and the way out.
TEST(VerbsBroadcast, GpuMemoryThisMachineCannotGiveIsRefusedNamingTheFieldAndTheWayOut) {
  Scenario scenario = load("tests/backend_verbs/scenarios/broadcast_4ranks.toml");
  EXPECT_TRUE(check_scenario_for_verbs(scenario, 4, true).is_ok());
  EXPECT_EQ(check_scenario_for_verbs(scenario, 2, true).code(), StatusCode::kInvalidArgument)
      << "four nodes are four ranks";
  Result<uint32_t> gpus = verbs::cuda::device_count();
  if (gpus && *gpus >= 3) GTEST_SKIP() << "this machine has " << *gpus << " CUDA GPUs";
  const Status st = check_scenario_for_verbs(scenario, 4, false);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("broadcast_4ranks.toml: [cluster] gpus_per_node = 3"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("--gpu-as-host"), std::string::npos) << st.message();
}

// The source's queue pair goes to the error state after its 5th send-side
// work request: every rank ends (no hang), the failure is a transport problem
// (QP_ERROR where it struck, ABORT passed on beyond it), nothing wrong was
// delivered (no safety problem), and every rank still reports the whole run.
TEST(VerbsBroadcast, AQueuePairErrorAtTheSourceEndsEveryRankWithAnErrorNotAHang) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  Scenario scenario = load("tests/backend_verbs/scenarios/broadcast_4ranks.toml");
  std::vector<Result<VerbsRunReport>> results = run_ranks(scenario, 4, [](RankId r, VerbsRunOptions& o) {
    if (r == 1) o.qp_error_after_posts = 5;
  });
  for (RankId r = 0; r < 4; ++r) {
    ASSERT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].status().to_string();
    const VerbsRunReport& v = *results[r];
    EXPECT_TRUE(v.whole_run) << "rank " << r;
    EXPECT_FALSE(v.report.passed()) << "rank " << r;
    bool transport = false;
    for (const Problem& p : v.report.problems) {
      EXPECT_NE(p.kind, ProblemKind::kSafety) << "rank " << r << ": " << problem_line(p);
      transport = transport || p.kind == ProblemKind::kTransport;
    }
    EXPECT_TRUE(transport) << "rank " << r << ":\n" << all_problems(v.report);
    EXPECT_TRUE(any_problem_mentions(v.report.problems, "QP_ERROR")) << all_problems(v.report);
  }
}

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CliResult run_cli(const std::string& args) {
  const std::string command = std::string(TENSORWIRE_CLI_PATH) + " " + args + " 2>&1";
  CliResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "-" + std::to_string(::getpid()) + ".json"))
      .string();
}

// Four processes: every rank passes, rank 0 writes the results in the
// simulator's schema, and `tensorwire compare` puts them beside the
// simulator's, destination by destination.
TEST(VerbsBroadcast, LaunchedProcessesWriteResultsThatCompareReadsBesideTheSimulators) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  const std::string path = kRoot + "/tests/backend_verbs/scenarios/broadcast_4ranks.toml";
  const std::string sim_json = temp_path("tw-bcast-sim");
  const std::string verbs_json = temp_path("tw-bcast-verbs");
  CliResult sim = run_cli("run " + path + " --json " + sim_json);
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  CliResult r = run_cli("launch -n 4 " + path + " --gpu-as-host --json " + verbs_json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* rank : {"[rank 0] PASS", "[rank 1] PASS", "[rank 2] PASS", "[rank 3] PASS"}) {
    EXPECT_NE(r.output.find(rank), std::string::npos) << r.output;
  }
  EXPECT_NE(r.output.find("(each checked on its rank)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(measured)"), std::string::npos) << r.output;
  std::ifstream in(verbs_json);
  ASSERT_TRUE(in.good()) << verbs_json;
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["backend"], "verbs");
  EXPECT_EQ(j["passed"], true);
  EXPECT_EQ(j["destinations"].size(), 12u);
  CliResult compared = run_cli("compare " + sim_json + " " + verbs_json);
  EXPECT_EQ(compared.exit_code, 0) << compared.output;
  EXPECT_NE(compared.output.find("node3/gpu2"), std::string::npos) << compared.output;
  // The verbs side's times are wall times its ranks measured.
  EXPECT_NE(compared.output.find(" wall"), std::string::npos) << compared.output;
  std::filesystem::remove(sim_json);
  std::filesystem::remove(verbs_json);
}

}  // namespace
}  // namespace tensorwire
