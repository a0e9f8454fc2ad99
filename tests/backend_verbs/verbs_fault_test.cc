// Faults on a real RDMA device through `tensorwire launch`, as real processes:
// a rank killed (SIGKILL) in the middle of a step, whose peers must name it
// lost and end on their own within the peer timeout, never hang; and a queue
// pair forced into the error state mid-transfer, which must fail the step
// with an error and deliver nothing wrong, as the simulator's qp_error fault
// does. The hooks are the hidden flags --die-at and --qp-error-at. Skips
// without a device (TENSORWIRE_RDMA_DEVICE / _ADDR).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/backend_verbs/verbs_cluster.h"

namespace tensorwire {
namespace {

using Clock = std::chrono::steady_clock;

const std::string kRoot = TENSORWIRE_SOURCE_ROOT;

// A command's output line by line, each with when it came.
struct TimedLine {
  Clock::time_point at;
  std::string text;
};

struct LaunchResult {
  int exit_code = -1;
  std::vector<TimedLine> lines;  // stdout and stderr together
  Clock::time_point started;
  Clock::time_point ended;

  std::string output() const {
    std::string all;
    for (const TimedLine& l : lines) all += l.text;
    return all;
  }
  // The first line containing `words`, if any.
  const TimedLine* first(const std::string& words) const {
    for (const TimedLine& l : lines) {
      if (l.text.find(words) != std::string::npos) return &l;
    }
    return nullptr;
  }
  // Whether some line of rank r's output contains `words`.
  bool rank_said(RankId r, const std::string& words) const {
    const std::string prefix = "[rank " + std::to_string(r) + "] ";
    for (const TimedLine& l : lines) {
      if (l.text.rfind(prefix, 0) == 0 && l.text.find(words) != std::string::npos) return true;
    }
    return false;
  }
};

LaunchResult run_launch(const std::string& args) {
  const std::string command = std::string(TENSORWIRE_CLI_PATH) + " launch " + args + " 2>&1";
  LaunchResult r;
  r.started = Clock::now();
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[8192];
  while (fgets(buf, sizeof buf, pipe) != nullptr) r.lines.push_back({Clock::now(), buf});
  const int status = pclose(pipe);
  r.ended = Clock::now();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Rank `killed` of 3 SIGKILLs itself when it starts step 2 of
// meta_data_change; the other two must name it lost and end by themselves:
// launch's grace is far longer than the liveness bound checked here, so a
// rank that hung would be seen hanging, not quietly stopped by launch.
void expect_killed_rank_named_lost_and_others_end(RankId killed) {
  const int peer_timeout_s = 3;
  LaunchResult r = run_launch("-n 3 " + kRoot +
                              "/scenarios/meta_data_change.toml --gpu-as-host --die-at " +
                              std::to_string(killed) + ":2 --peer-timeout " +
                              std::to_string(peer_timeout_s) + " --grace 120");
  const std::string out = r.output();
  EXPECT_EQ(r.exit_code, 1) << out;
  // launch names the rank that died, and how.
  const std::string died = "rank " + std::to_string(killed) + " was killed by signal 9 (Killed)";
  EXPECT_NE(out.find(died), std::string::npos) << out;
  EXPECT_EQ(out.find("stopped by launch"), std::string::npos) << out;
  // launch's first notice of a failure: the killed rank was dead by then (the
  // others fail only because of it), though launch may have reaped one of
  // them first.
  const TimedLine* failure = r.first("to end on their own");
  ASSERT_NE(failure, nullptr) << out;
  for (RankId other = 0; other < 3; ++other) {
    if (other == killed) continue;
    EXPECT_TRUE(r.rank_said(other, "rank " + std::to_string(killed) + " lost: ")) << out;
    EXPECT_TRUE(r.rank_said(other, "FAIL")) << out;
    EXPECT_NE(out.find("rank " + std::to_string(other) + " exited with 1"), std::string::npos)
        << out;
  }
  // Liveness, not timing: the others end within the peer timeout of the
  // failure (they notice at once), with 10 s of slack for a slow machine.
  // Both stretches are printed, so a slow run in CI says where it was slow.
  const double tail_s = seconds_between(failure->at, r.ended);
  std::printf("launch: %.2f s to the failure, %.2f s from it to the end\n",
              seconds_between(r.started, failure->at), tail_s);
  EXPECT_LT(tail_s, peer_timeout_s + 10.0) << out;
}

TEST(VerbsFault, AKilledRankIsNamedLostByTheOthersWhichEndOnTheirOwnWithinThePeerTimeout) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  expect_killed_rank_named_lost_and_others_end(1);
}

TEST(VerbsFault, AKilledRankZeroIsNamedLostByTheOthersWhichEndOnTheirOwnWithinThePeerTimeout) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  // Rank 0 holds the coordinator: the others see their one connection close.
  expect_killed_rank_named_lost_and_others_end(0);
}

std::string temp_json(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "-" + std::to_string(::getpid()) + ".json"))
      .string();
}

// quickstart: rank 0 posts 8 send-side work requests in step 1 (2 tensor
// requests, 2 meta-data updates, 2 re-requests, 2 writes), whichever order
// they come in, and 4 in step 2; so its 10th is in step 2, with step 1 done.
TEST(VerbsFault, AQueuePairForcedIntoTheErrorStateFailsTheStepAndDeliversNothingWrong) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  const std::string json = temp_json("tw-qp-error");
  LaunchResult r = run_launch("-n 2 " + kRoot +
                              "/scenarios/quickstart.toml --gpu-as-host --qp-error-at 0:10 --json " +
                              json);
  const std::string out = r.output();
  EXPECT_EQ(r.exit_code, 1) << out;
  // Both ends fail, each naming the queue pair's error state.
  EXPECT_TRUE(r.rank_said(0, "QP_ERROR")) << out;
  EXPECT_TRUE(r.rank_said(1, "QP_ERROR")) << out;
  EXPECT_TRUE(r.rank_said(0, "FAIL")) << out;
  std::ifstream in(json);
  ASSERT_TRUE(in.good()) << json << "\n" << out;
  const nlohmann::json j = nlohmann::json::parse(in);
  std::filesystem::remove(json);
  EXPECT_EQ(j["passed"], false);
  // Nothing delivered wrong: every Recv that completed had the right bytes
  // (the receiver checks each one), and no problem is a safety one.
  EXPECT_EQ(j["workload"]["content_mismatches"], 0) << j["workload"].dump();
  bool qp_error = false;
  for (const nlohmann::json& p : j["problems"]) {
    EXPECT_NE(p["kind"], "safety") << p.dump();
    qp_error = qp_error || p["text"].get<std::string>().find("QP_ERROR") != std::string::npos;
  }
  EXPECT_TRUE(qp_error) << j["problems"].dump();
  ASSERT_EQ(j["steps"].size(), 3u) << "the run still ends: no Recv waits forever";
  EXPECT_EQ(j["steps"][0]["transfers_failed"], 0) << j["steps"][0].dump();
  EXPECT_GT(j["steps"][1]["transfers_failed"], 0) << j["steps"][1].dump();
}

}  // namespace
}  // namespace tensorwire
