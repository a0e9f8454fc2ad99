// The simulator's scenarios on a real RDMA device: every rank a thread of this
// process with its own coordinator, VerbsNic, memory, clock and RdmaRendezvous
// (runner/verbs_run.h), exactly as separate processes would have them; and
// through `tensorwire launch` as real processes. Every delivered tensor is
// checked byte for byte; a rank that dies makes the others fail with an
// error, never hang. Skips without a device (TENSORWIRE_RDMA_DEVICE / _ADDR).
#include "runner/verbs_run.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend_verbs/cuda_memory.h"
#include "core/trace_recording.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"
#include "tests/backend_verbs/verbs_cluster.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_protocol.h"

namespace tensorwire {
namespace {

using std::chrono::milliseconds;
using verbs::testing::rdma_unavailable_reason;

const std::string kRoot = TENSORWIRE_SOURCE_ROOT;

Scenario load(const std::string& relative) { return load_scenario_file(kRoot + "/" + relative); }

std::string all_problems(const RunReport& r) {
  std::string s;
  for (const Problem& p : r.problems) s += "  " + problem_line(p) + "\n";
  return s;
}

// Runs every rank of `scenario` as a thread; `tweak` adjusts one rank's options.
// With `traces` (one per rank), the run is traced and rank r's merged trace
// lands in (*traces)[r].
std::vector<Result<VerbsRunReport>> run_ranks(
    const Scenario& scenario, uint32_t world,
    const std::function<void(RankId, VerbsRunOptions&)>& tweak = {},
    std::vector<TraceRecording>* traces = nullptr) {
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
      o.trace = traces != nullptr;
      NullTraceSink no_trace;
      TraceSink& trace = traces != nullptr ? static_cast<TraceSink&>((*traces)[r]) : no_trace;
      results[r] = run_verbs_rank(scenario, o, *cs[r], trace);
      // A rank that died takes its coordinator connection with it.
      if (results[r].is_ok() && results[r]->died) cs[r].reset();
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

// Every rank passed, saw the whole run, and agrees with the simulator on what
// was moved: the same tensors in each step with the same content bytes.
// With `on_gpus`, GPU tensors live in CUDA memory (not --gpu-as-host); with
// `completion_channel`, idle ranks sleep in the completion channel.
void expect_passes_like_the_simulator(const std::string& path, uint32_t world, bool on_gpus = false,
                                      bool completion_channel = false) {
  Scenario scenario = load(path);
  std::vector<Result<VerbsRunReport>> results =
      run_ranks(scenario, world, [on_gpus, completion_channel](RankId, VerbsRunOptions& o) {
        o.gpu_as_host = !on_gpus;
        o.use_completion_channel = completion_channel;
      });
  Scenario checked = scenario;
  ASSERT_TRUE(check_scenario_for_verbs(checked, world, !on_gpus).is_ok());
  NullTraceSink trace;
  RunReport sim = run_simulation(scenario, {}, trace);
  ASSERT_TRUE(sim.passed()) << all_problems(sim);
  for (RankId r = 0; r < world; ++r) {
    ASSERT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].status().to_string();
    const VerbsRunReport& v = *results[r];
    EXPECT_TRUE(v.whole_run) << "rank " << r;
    EXPECT_TRUE(v.report.passed()) << "rank " << r << ":\n" << all_problems(v.report);
    EXPECT_EQ(v.report.backend, "verbs");
    EXPECT_TRUE(v.report.workload.finished);
    ASSERT_EQ(v.report.workload.steps.size(), sim.workload.steps.size());
    for (size_t i = 0; i < sim.workload.steps.size(); ++i) {
      const auto& vt = v.report.workload.steps[i].transfers;
      const auto& st = sim.workload.steps[i].transfers;
      ASSERT_EQ(vt.size(), st.size()) << "step " << i;
      for (size_t j = 0; j < st.size(); ++j) {
        EXPECT_EQ(vt[j].name, st[j].name);
        EXPECT_EQ(vt[j].bytes, st[j].bytes) << vt[j].name;
        EXPECT_TRUE(vt[j].done && vt[j].status.is_ok()) << vt[j].name;
        // Checked byte for byte: payload verification ran on this tensor.
        EXPECT_EQ(vt[j].verified, st[j].verified) << vt[j].name;
      }
      ASSERT_TRUE(v.measured_step_ns[i].has_value());
    }
  }
}

TEST(VerbsRun, QuickstartOnTwoRanksDeliversEveryTensorByteExact) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  expect_passes_like_the_simulator("scenarios/quickstart.toml", 2);
}

// Idle ranks asleep in the completion channel (--completion-channel) still
// see every completion: the run ends, byte-exact, with meta-data changes.
TEST(VerbsRun, RanksSleepingInTheCompletionChannelDeliverEveryTensorByteExact) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  expect_passes_like_the_simulator("scenarios/meta_data_change.toml", 3, false, true);
}

// GPU memory for real: GPUDirect registration of device memory (gpu1 in
// quickstart), and the host-proxy path with cudaMemcpyAsync for GPUs without
// GPUDirect (gpu_no_direct). Needs an RDMA device and two CUDA GPUs.
TEST(VerbsRun, GpuScenariosRunOnCudaMemoryByteExact) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  Result<uint32_t> gpus = verbs::cuda::device_count();
  if (!gpus) GTEST_SKIP() << "no CUDA GPU: " << gpus.status().to_string();
  if (*gpus < 2) GTEST_SKIP() << "these scenarios use gpu0 and gpu1; this machine has " << *gpus;
  expect_passes_like_the_simulator("scenarios/gpu_no_direct.toml", 2, true);
  expect_passes_like_the_simulator("scenarios/quickstart.toml", 2, true);
}

TEST(VerbsRun, StringTensorsOnTwoRanks) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  expect_passes_like_the_simulator("scenarios/string_tensors.toml", 2);
}

TEST(VerbsRun, MetaDataChangesOnThreeRanks) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  expect_passes_like_the_simulator("scenarios/meta_data_change.toml", 3);
}

TEST(VerbsRun, DeadTensorsOnFourRanks) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  expect_passes_like_the_simulator("tests/backend_verbs/scenarios/dead_tensors_4ranks.toml", 4);
}

TEST(VerbsRun, EveryPairOfFourRanksWithMetaDataChanges) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  expect_passes_like_the_simulator("tests/backend_verbs/scenarios/mesh_4ranks.toml", 4);
}

TEST(VerbsRun, ARankThatDiesMidStepMakesTheOthersFailNamingItNotHang) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  Scenario scenario = load("tests/backend_verbs/scenarios/mesh_4ranks.toml");
  const auto began = std::chrono::steady_clock::now();
  std::vector<Result<VerbsRunReport>> results =
      run_ranks(scenario, 4, [](RankId r, VerbsRunOptions& o) {
        o.phase_timeout = milliseconds(20000);
        if (r == 2) {
          o.die_at_step = 2;
          o.die = [] {};  // in-process: just leave, dropping NIC and coordinator
        }
      });
  ASSERT_TRUE(results[2].is_ok());
  EXPECT_TRUE(results[2]->died);
  for (RankId r : {0u, 1u, 3u}) {
    ASSERT_TRUE(results[r].is_ok()) << results[r].status().to_string();
    const RunReport& rep = results[r]->report;
    EXPECT_FALSE(rep.passed()) << "rank " << r;
    EXPECT_FALSE(rep.workload.finished);
    EXPECT_FALSE(results[r]->whole_run);
    const std::string problems = all_problems(rep);
    EXPECT_NE(problems.find("did not finish"), std::string::npos) << problems;
    // Rank 0 saw rank 2's coordinator connection close; the others heard it
    // from rank 0.
    EXPECT_NE(problems.find("rank 2 lost: "), std::string::npos) << problems;
    // Step 1 was complete before rank 2 died.
    ASSERT_GE(rep.workload.steps.size(), 1u);
    for (const TransferResult& t : rep.workload.steps[0].transfers) {
      EXPECT_TRUE(t.status.is_ok()) << t.name << ": " << t.status.to_string();
    }
  }
  // Liveness, not timing: the others noticed at once, well before their 20 s
  // phase timeout (set-up included, with 10 s of slack over the default 5 s
  // peer timeout).
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(15));
}

// As the simulator's qp_error fault: the queue pair between ranks 0 and 1
// goes to the error state in the middle of step 2 (rank 0's 10th send-side
// work request; step 1 takes 8), so the Recvs on it fail with errors, both
// ends, and nothing is delivered wrong; the run still ends.
TEST(VerbsRun, AQueuePairForcedIntoTheErrorStateFailsRecvsWithErrorsAndDeliversNothingWrong) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  Scenario scenario = load("scenarios/quickstart.toml");
  std::vector<Result<VerbsRunReport>> results =
      run_ranks(scenario, 2, [](RankId r, VerbsRunOptions& o) {
        if (r == 0) o.qp_error_after_posts = 10;
      });
  for (RankId r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[r].is_ok()) << results[r].status().to_string();
    const RunReport& rep = results[r]->report;
    EXPECT_TRUE(results[r]->whole_run) << all_problems(rep);
    EXPECT_TRUE(rep.workload.finished) << all_problems(rep);
    EXPECT_FALSE(rep.passed());
    EXPECT_EQ(rep.workload.content_mismatches, 0u);
    for (const Problem& p : rep.problems) EXPECT_NE(p.kind, ProblemKind::kSafety) << p;
    ASSERT_EQ(rep.workload.steps.size(), 3u);
    size_t failed_in_step_2 = 0;
    for (const StepResult& step : rep.workload.steps) {
      for (const TransferResult& t : step.transfers) {
        EXPECT_TRUE(t.done) << "step " << step.step_id << " " << t.name << " never ended";
        EXPECT_TRUE(t.mismatch.empty()) << t.name << ": " << t.mismatch;
        if (step.step_id == 1) {
          EXPECT_TRUE(t.status.is_ok()) << t.name << ": " << t.status.to_string();
        }
        if (step.step_id != 2 || t.status.is_ok()) continue;
        ++failed_in_step_2;
        EXPECT_EQ(t.status.code(), StatusCode::kQpError) << t.name << ": " << t.status.to_string();
      }
    }
    EXPECT_GT(failed_in_step_2, 0u) << all_problems(rep);
  }
}

TEST(VerbsRun, GpuMemoryThisMachineCannotGiveIsRefusedNamingTensorFieldAndWhy) {
  Scenario scenario = load("scenarios/quickstart.toml");
  Status st = check_scenario_for_verbs(scenario, 2, false);
  Result<uint32_t> gpus = verbs::cuda::device_count();
  if (gpus && *gpus >= 2) {
    EXPECT_TRUE(st.is_ok()) << "gpu1 exists here: " << st.to_string();
    GTEST_SKIP() << "this machine has " << *gpus << " CUDA GPUs: nothing to refuse";
  }
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("tensor 'weights'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("dst_memory = \"gpu1\""), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(gpus ? "CUDA GPU(s)" : gpus.status().message()), std::string::npos)
      << st.message();
  EXPECT_EQ(check_scenario_for_verbs(scenario, 3, true).code(), StatusCode::kInvalidArgument)
      << "two nodes are two ranks";
  // A collective places its GPU buffers itself: host memory stands in for them.
  Scenario broadcast = load("scenarios/broadcast_mixed.toml");
  EXPECT_TRUE(check_scenario_for_verbs(broadcast, broadcast.cluster.nodes, true).is_ok());
}

// ---- tensorwire launch: real processes ----

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

// A traced run: every rank's work requests, arrivals, barriers and Recvs in
// one trace, on one time line (the ranks share this host's clock), matching
// the run's own counters.
TEST(VerbsRun, ATracedRunRecordsEveryRanksWorkOnOneTimeLine) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  Scenario scenario = load("scenarios/quickstart.toml");
  const uint32_t world = 2;
  std::vector<TraceRecording> traces(world);
  std::vector<Result<VerbsRunReport>> results = run_ranks(scenario, world, {}, &traces);
  for (RankId r = 0; r < world; ++r) {
    ASSERT_TRUE(results[r].is_ok()) << results[r].status().to_string();
    ASSERT_TRUE(results[r]->report.passed()) << all_problems(results[r]->report);
    EXPECT_NE(results[r]->trace_clocks.find("one host"), std::string::npos);
  }
  // Every rank merged the same parts into the same trace.
  ASSERT_EQ(traces[0].events().size(), traces[1].events().size());
  const VerbsRunReport& v = *results[0];
  const std::vector<TraceEvent>& events = traces[0].events();
  std::map<std::string, uint64_t> counts;  // "track|name"
  for (const TraceEvent& e : events) {
    EXPECT_GE(e.start_ns, 0) << e.track << " " << e.name;
    EXPECT_GE(e.duration_ns, 0) << e.track << " " << e.name;
    ++counts[e.track + "|" + e.name];
  }
  const auto count = [&counts](const std::string& track, const std::string& name) {
    return counts[track + "|" + name];
  };
  for (RankId r = 0; r < world; ++r) {
    const RankId p = 1 - r;
    const std::string node = "node" + std::to_string(r);
    const std::string tx = node + "/nic tx to node" + std::to_string(p);
    const std::string rx = node + "/nic rx from node" + std::to_string(p);
    const TransportStats& s = v.report.rank_stats[r];
    // One slice per work request posted, one instant per arrival.
    EXPECT_EQ(count(tx, "send"), s.sends) << "rank " << r;
    EXPECT_EQ(count(tx, "rdma write with imm"), s.rdma_writes_with_imm) << "rank " << r;
    EXPECT_EQ(count("node" + std::to_string(p) + "/nic rx from node" + std::to_string(r),
                    "recv rdma with imm"),
              s.rdma_writes_with_imm)
        << "rank " << r;
    EXPECT_EQ(count("rank " + std::to_string(r) + "/cpu", "register memory"), s.registrations);
    EXPECT_GE(count("rank " + std::to_string(r) + "/progress", "phase barrier"), 1u);
    // Each Recv is a slice, and something from its sender arrived while it ran.
    for (const StepResult& step : v.report.workload.steps) {
      for (const TransferResult& t : step.transfers) {
        if (t.dst != r) continue;
        const TraceEvent* slice = nullptr;
        for (const TraceEvent& e : events) {
          if (e.track == "rank " + std::to_string(r) + "/recv" && e.name == t.name &&
              e.detail.find("step " + std::to_string(step.step_id) + ",") == 0) {
            slice = &e;
          }
        }
        ASSERT_NE(slice, nullptr) << t.name << " step " << step.step_id;
        EXPECT_EQ(slice->duration_ns, t.done_ns - t.recv_called_ns);
        bool arrived = false;
        for (const TraceEvent& e : events) {
          arrived = arrived || (e.track == rx && e.start_ns >= slice->start_ns &&
                                e.start_ns <= slice->start_ns + slice->duration_ns);
        }
        EXPECT_TRUE(arrived) << t.name << " step " << step.step_id;
      }
    }
  }
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "-" + std::to_string(::getpid()) + ".json"))
      .string();
}

// OneFlow CommNet on a real queue pair: RDMA reads on rxe, chunked with two
// in flight, eager messages through a 4-receive pool where receiver-not-ready
// is an error; as threads and as two launched processes.
TEST(VerbsRun, OneFlowCommNetReadsInChunksOnTwoRanksByteExact) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  const std::string path = "tests/backend_verbs/scenarios/oneflow_commnet_2ranks.toml";
  expect_passes_like_the_simulator(path, 2);
  CliResult r = run_cli("launch -n 2 " + kRoot + "/" + path + " --gpu-as-host");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[rank 0] PASS"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[rank 1] PASS"), std::string::npos) << r.output;
}

// MVAPICH2-GPU on real queue pairs: RTS/CTS, RDMA writes into vbufs and the
// user's buffer, a FIN per block, GPU staging through vbufs with GPU memory
// standing in as host memory (--gpu-as-host), on 3 ranks; the naive baseline
// on 2; and on CUDA GPUs with cudaMemcpyAsync where this machine has one.
TEST(VerbsRun, Mvapich2GpuPipelinesBlocksThroughVbufsOnThreeRanksByteExact) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  const std::string path = "tests/backend_verbs/scenarios/mvapich2_gpu_3ranks.toml";
  expect_passes_like_the_simulator(path, 3);
  expect_passes_like_the_simulator("tests/backend_verbs/scenarios/mvapich2_gpu_2ranks_naive.toml", 2);
  CliResult r = run_cli("launch -n 3 " + kRoot + "/" + path + " --gpu-as-host");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* rank : {"[rank 0] PASS", "[rank 1] PASS", "[rank 2] PASS"}) {
    EXPECT_NE(r.output.find(rank), std::string::npos) << r.output;
  }
}

// The legacy TensorFlow verbs protocol on real queue pairs: every message an
// RDMA write with immediate into the peer's message buffer, ACKed before the
// next; tensors copied into registered tensor buffers, written with the
// buffer's index as immediate, copied out, BUFFER_IDLE; a buffer reallocated
// when its tensor grows. 2 ranks of host memory, 3 with GPU tensors staged
// through host memory (--gpu-as-host), as threads and as launched processes.
TEST(VerbsRun, TfVerbsLegacyCopiesThroughTensorBuffersOnTwoAndThreeRanksByteExact) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  const std::string two = "tests/backend_verbs/scenarios/tf_verbs_legacy_2ranks.toml";
  const std::string three = "tests/backend_verbs/scenarios/tf_verbs_legacy_3ranks.toml";
  expect_passes_like_the_simulator(two, 2);
  expect_passes_like_the_simulator(three, 3);
  CliResult r2 = run_cli("launch -n 2 " + kRoot + "/" + two + " --gpu-as-host");
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  EXPECT_NE(r2.output.find("[rank 1] PASS"), std::string::npos) << r2.output;
  CliResult r3 = run_cli("launch -n 3 " + kRoot + "/" + three + " --gpu-as-host");
  ASSERT_EQ(r3.exit_code, 0) << r3.output;
  for (const char* rank : {"[rank 0] PASS", "[rank 1] PASS", "[rank 2] PASS"}) {
    EXPECT_NE(r3.output.find(rank), std::string::npos) << r3.output;
  }
}

TEST(VerbsRun, Mvapich2GpuStagesThroughCudaStreamsByteExact) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  Result<uint32_t> gpus = verbs::cuda::device_count();
  if (!gpus) GTEST_SKIP() << "no CUDA GPU: " << gpus.status().to_string();
  expect_passes_like_the_simulator("tests/backend_verbs/scenarios/mvapich2_gpu_2ranks_naive.toml", 2,
                                   true);
  expect_passes_like_the_simulator("tests/backend_verbs/scenarios/mvapich2_gpu_3ranks.toml", 3, true);
}

// --set reaches every rank: the ping-pong scenario with another size and
// protocol than its file's, as `sweep` and the protocol table run it.
TEST(VerbsLaunch, OverridesReachEveryRank) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  const std::string json = temp_path("tw-launch-set");
  CliResult r = run_cli("launch -n 2 " + kRoot + "/scenarios/pingpong.toml --json " + json +
                        " --set 'workload.tensor[0].bytes=1MiB' --set protocol.name=oneflow_commnet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(json);
  ASSERT_TRUE(in.good()) << json;
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["passed"], true);
  EXPECT_EQ(j["protocol"]["name"], "oneflow_commnet");
  EXPECT_EQ(j["steps"][0]["bytes"], 1u << 20);
  std::filesystem::remove(json);
}

TEST(VerbsLaunch, TwoProcessesRunQuickstartAndRankZeroWritesMeasuredJson) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  const std::string json = temp_path("tw-launch");
  const std::string trace = temp_path("tw-launch-trace");
  CliResult r = run_cli("launch -n 2 " + kRoot + "/scenarios/quickstart.toml --gpu-as-host --json " +
                        json + " --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[rank 0] PASS"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[rank 1] PASS"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 0 exited with 0; rank 1 exited with 0"), std::string::npos);
  std::ifstream in(json);
  ASSERT_TRUE(in.good()) << json;
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["backend"], "verbs");
  EXPECT_EQ(j["passed"], true);
  EXPECT_EQ(j["steps"].size(), 3u);
  EXPECT_TRUE(j["steps"][0].contains("measured_ns"));
  EXPECT_TRUE(j["steps"][0]["per_tensor"][0].contains("measured_ns"));
  std::filesystem::remove(json);
  // The trace has both processes' work: rank 1 recorded its part, rank 0 wrote it.
  std::ifstream trace_in(trace);
  ASSERT_TRUE(trace_in.good()) << trace;
  const nlohmann::json t = nlohmann::json::parse(trace_in);
  EXPECT_EQ(t["otherData"]["backend"], "verbs");
  std::set<std::string> tracks;
  for (const nlohmann::json& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") tracks.insert(e["args"]["name"]);
  }
  for (const char* track : {"node0/nic tx to node1", "node1/nic tx to node0", "rank 0/recv",
                            "rank 1/recv", "rank 0/progress", "rank 1/progress"}) {
    EXPECT_EQ(tracks.count(track), 1u) << track;
  }
  EXPECT_NE(r.output.find("trace: " + trace), std::string::npos) << r.output;
  std::filesystem::remove(trace);
}

// ---- CLI flag errors: no device needed ----

TEST(VerbsCli, FlagErrorsNameTheFlagAndExitTwo) {
  const std::string q = kRoot + "/scenarios/quickstart.toml";
  struct Case {
    std::string args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"run " + q + " --backend cuda", "--backend must be 'sim' or 'verbs'"},
      {"run " + q + " --device rxe0", "--device applies to --backend verbs only"},
      {"run " + q + " --busy-poll", "--busy-poll applies to --backend verbs only"},
      {"run " + q + " --completion-channel", "--completion-channel applies to --backend verbs only"},
      {"run " + q + " --backend verbs --rank 0 --world 2 --coordinator 127.0.0.1:1 --device rxe0 "
       "--gpu-as-host --busy-poll --completion-channel",
       "--busy-poll and --completion-channel exclude each other"},
      {"run " + q + " --backend verbs --rank 0 --device rxe0", "--world"},
      {"run " + q + " --backend verbs --rank x --world 2 --device rxe0", "--rank must be a whole number"},
      {"run " + q + " --backend verbs --rank 2 --world 2 --device rxe0", "rank"},
      {"run " + q + " --backend verbs --rank 0 --world 2 --device rxe0",
       "--coordinator HOST:PORT is required"},
      {"run " + q + " --backend verbs --rank 0 --world 2 --coordinator 127.0.0.1:1 --device rxe0",
       "dst_memory = \"gpu1\""},
      {"run " + q + " --backend verbs --rank 0 --world 2 --coordinator 127.0.0.1:1 --device rxe0 "
       "--gpu-as-host --phase-timeout -1",
       "--phase-timeout must be a number of seconds"},
      {"run " + q + " --backend verbs --rank 0 --world 3 --coordinator 127.0.0.1:1 --device rxe0 "
       "--gpu-as-host",
       "[cluster] nodes = 2 but the run has 3 ranks"},
      {"run " + q + " --backend verbs --rank 0 --world 2 --coordinator 127.0.0.1:1 --device rxe0 "
       "--gpu-as-host --timing-only",
       "--timing-only does not apply"},
      {"run " + q + " --backend verbs --rank 0 --world 2 --coordinator 127.0.0.1:1 --device rxe0 "
       "--gpu-as-host --die-at 1",
       "--die-at must be RANK:STEP"},
      {"run " + q + " --backend verbs --rank 0 --world 2 --coordinator 127.0.0.1:1 --device rxe0 "
       "--gpu-as-host --trace /tmp/tw-same.json --json /tmp/./tw-same.json",
       "--trace and --json name the same file"},
      {"launch -n 2 " + q + " --gpu-as-host --trace /tmp/tw-same.json --json /tmp/./tw-same.json",
       "--trace and --json name the same file"},
      {"launch -n 0 " + q, "-n must be a whole number of ranks from 1 to 64"},
      {"launch -n 65 " + q, "-n must be a whole number of ranks from 1 to 64"},
      {"launch -n 2 " + q + " --device rxe0", "dst_memory = \"gpu1\""},
      {"launch -n 2 " + q + " --grace 0", "--grace must be a number of seconds"},
      {"launch -n 2 " + q + " --gpu-as-host --peer-timeout 0",
       "--peer-timeout must be a number of seconds"},
      {"run " + q + " --peer-timeout 3", "--peer-timeout applies to --backend verbs only"},
      {"run " + q + " --qp-error-at 0:1", "--qp-error-at applies to --backend verbs only"},
      {"run " + q + " --backend verbs --rank 0 --world 2 --coordinator 127.0.0.1:1 --device rxe0 "
       "--gpu-as-host --peer-timeout x",
       "--peer-timeout must be a number of seconds"},
      {"run " + q + " --backend verbs --rank 0 --world 2 --coordinator 127.0.0.1:1 --device rxe0 "
       "--gpu-as-host --qp-error-at 0:0",
       "--qp-error-at must be RANK:N with N at least 1"},
      {"run " + q + " --backend verbs --rank 0 --world 2 --coordinator 127.0.0.1:1 --device rxe0 "
       "--gpu-as-host --qp-error-at 1",
       "--qp-error-at must be RANK:N"},
      {"launch -n 2 /no/such/file.toml", "/no/such/file.toml"},
      {"launch -n 2 " + q + " --gpu-as-host --set cluster.nodes=9999",
       "--set cluster.nodes=9999: cluster.nodes: 9999 is out of range"},
  };
  for (const Case& c : cases) {
    CliResult r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace tensorwire

namespace tensorwire {
namespace {

TEST(VerbsRun, AWriteToAStaleRkeyThroughTheProtocolIsARemoteAccessError) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  // The bug zoo's stale re-request address: after step 2's meta-data change
  // the sender writes to the result buffer of the first request, whose
  // registration the receiver has given up. On hardware that is a remote
  // access error, and the Recvs on that queue pair fail with it.
  Scenario scenario = load("scenarios/meta_data_change.toml");
  tf_verbs::options_of(scenario.protocol.options).planted_bug = tf_verbs::PlantedBug::kStaleReRequestAddress;
  std::vector<Result<VerbsRunReport>> results = run_ranks(
      scenario, 3, [](RankId, VerbsRunOptions& o) { o.phase_timeout = milliseconds(20000); });
  bool remote_access_error = false;
  for (RankId r = 0; r < 3; ++r) {
    ASSERT_TRUE(results[r].is_ok()) << results[r].status().to_string();
    const RunReport& rep = results[r]->report;
    EXPECT_FALSE(rep.passed()) << "rank " << r;
    for (const TransferResult& t : rep.workload.steps.at(0).transfers) {
      EXPECT_TRUE(t.status.is_ok()) << "step 1 has no stale address yet: " << t.name;
    }
    remote_access_error =
        remote_access_error || all_problems(rep).find("REMOTE_ACCESS") != std::string::npos;
  }
  EXPECT_TRUE(remote_access_error) << all_problems(results[0]->report);
}

}  // namespace
}  // namespace tensorwire
