// The local rank processes behind `tensorwire launch`, with /bin/sh children:
// their output arrives whole line by whole line with the rank's prefix, a
// failed rank has the others stopped once the grace is over (SIGTERM, then
// SIGKILL for one that ignores it), and how each rank ended reads as such.
#include "launch/rank_processes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

namespace tensorwire::launch {
namespace {

using std::chrono::milliseconds;

std::vector<std::string> sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines of `text` that start with rank r's prefix, without it.
std::vector<std::string> rank_lines(const std::string& text, size_t r) {
  const std::string prefix = "[rank " + std::to_string(r) + "] ";
  std::vector<std::string> found;
  for (const std::string& line : lines_of(text)) {
    if (line.rfind(prefix, 0) == 0) found.push_back(line.substr(prefix.size()));
  }
  return found;
}

// A fresh directory for files the children use to wait for each other.
std::string temp_dir() {
  std::string pattern = testing::TempDir() + "/tw-rank-processes-XXXXXX";
  const char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  return pattern;
}

TEST(RankProcesses, OutputIsForwardedWholeLinesWithTheRanksPrefix) {
  RankProcesses spec;
  constexpr size_t kRanks = 3;
  for (size_t r = 0; r < kRanks; ++r) {
    const std::string n = std::to_string(r);
    // Half a line, a pause in which the other ranks write theirs, the rest.
    spec.command_lines.push_back(sh("printf '" + n + " first '; sleep 0.05; printf 'half\\n" + n +
                                    " second\\n'; echo '" + n + " to stderr' >&2; printf 'no newline'"));
  }
  std::ostringstream out;
  std::ostringstream err;
  const RanksOutcome outcome = run_rank_processes(spec, out, err);

  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.start_failure, StartFailure::kNone);
  ASSERT_EQ(outcome.ends.size(), kRanks);
  EXPECT_EQ(lines_of(out.str()).size(), 3 * kRanks) << out.str();
  EXPECT_EQ(lines_of(err.str()).size(), kRanks) << err.str();
  for (size_t r = 0; r < kRanks; ++r) {
    const std::string n = std::to_string(r);
    EXPECT_EQ(rank_lines(out.str(), r),
              (std::vector<std::string>{n + " first half", n + " second", "no newline"}))
        << out.str();
    EXPECT_EQ(rank_lines(err.str(), r), std::vector<std::string>{n + " to stderr"}) << err.str();
    EXPECT_TRUE(outcome.ends[r].started);
    EXPECT_EQ(exit_code_of(outcome.ends[r]), 0);
    EXPECT_EQ(describe_end(outcome.ends[r]), "exited with 0");
  }
}

TEST(RankProcesses, AFailedRankHasTheOthersStoppedAfterTheGrace) {
  const std::string dir = temp_dir();
  RankProcesses spec;
  spec.grace = milliseconds(50);
  spec.kill_delay = milliseconds(50);
  spec.error_prefix = "test: error: ";
  spec.notice_prefix = "test: ";
  // Rank 0 fails once rank 2 ignores SIGTERM; ranks 1 and 2 would sleep 20 s.
  spec.command_lines = {
      sh("while [ ! -e " + dir + "/ready ]; do sleep 0.01; done; exit 3"),
      sh("exec sleep 20"),
      sh("trap '' TERM; touch " + dir + "/ready; exec sleep 20"),
  };
  std::ostringstream out;
  std::ostringstream err;
  const auto start = std::chrono::steady_clock::now();
  const RanksOutcome outcome = run_rank_processes(spec, out, err);
  const auto took = std::chrono::steady_clock::now() - start;

  EXPECT_EQ(outcome.exit_code, 3);  // the worst: rank 0's own code, above a signal's 1
  ASSERT_EQ(outcome.ends.size(), 3u);
  EXPECT_EQ(describe_end(outcome.ends[0]), "exited with 3");
  EXPECT_FALSE(outcome.ends[0].stopped_after_failure);
  EXPECT_EQ(describe_end(outcome.ends[1]),
            "was killed by signal 15 (Terminated) (stopped by launch after another rank failed)");
  EXPECT_EQ(describe_end(outcome.ends[2]),
            "was killed by signal 9 (Killed) (stopped by launch after another rank failed)");
  EXPECT_EQ(exit_code_of(outcome.ends[1]), kRankFailedExitCode);
  EXPECT_GE(took, spec.grace + spec.kill_delay);
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(err.str(), "");
  // The supervisor said who failed, whom it stopped and whom it killed.
  const std::vector<std::string> lines = lines_of(out.str());
  const auto said = [&lines](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  EXPECT_TRUE(said("test: rank 0 exited with 3; the others get 0.05 s to end on their own"))
      << out.str();
  EXPECT_TRUE(said("test: rank 1, rank 2 still running 0.05 s after rank 0 failed: stopping "
                   "(SIGTERM)"))
      << out.str();
  // Rank 1 may or may not have been reaped by then; rank 2 ignored SIGTERM.
  EXPECT_TRUE(said("test: rank 2 still running 0.05 s after SIGTERM: killing (SIGKILL)") ||
              said("test: rank 1, rank 2 still running 0.05 s after SIGTERM: killing (SIGKILL)"))
      << out.str();
  unlink((dir + "/ready").c_str());
  rmdir(dir.c_str());
}

TEST(RankProcesses, RanksThatEndWithinTheGraceAreNotStopped) {
  RankProcesses spec;
  spec.grace = milliseconds(10'000);
  spec.command_lines = {sh("exit 2"), sh("sleep 0.1; exit 0")};
  std::ostringstream out;
  std::ostringstream err;
  const RanksOutcome outcome = run_rank_processes(spec, out, err);

  EXPECT_EQ(outcome.exit_code, 2);
  ASSERT_EQ(outcome.ends.size(), 2u);
  EXPECT_EQ(describe_end(outcome.ends[0]), "exited with 2");
  EXPECT_EQ(describe_end(outcome.ends[1]), "exited with 0");
  EXPECT_FALSE(outcome.ends[1].stopped_after_failure);
}

TEST(RankProcesses, ARankKilledByASignalIsDescribedAsSuch) {
  RankProcesses spec;
  spec.command_lines = {sh("kill -KILL $$"), sh("exit 0")};
  std::ostringstream out;
  std::ostringstream err;
  const RanksOutcome outcome = run_rank_processes(spec, out, err);

  EXPECT_EQ(outcome.exit_code, kRankFailedExitCode);
  ASSERT_EQ(outcome.ends.size(), 2u);
  EXPECT_EQ(describe_end(outcome.ends[0]), "was killed by signal 9 (Killed)");
  EXPECT_EQ(exit_code_of(outcome.ends[0]), kRankFailedExitCode);
  EXPECT_FALSE(outcome.ends[0].stopped_after_failure);
  EXPECT_EQ(describe_end(outcome.ends[1]), "exited with 0");
}

TEST(RankProcesses, AProgramThatCannotBeExecutedSaysSoOnItsStderr) {
  RankProcesses spec;
  spec.command_lines = {{"/no/such/program", "--flag"}};
  spec.exec_failed_line = "test: execv failed\n";
  std::ostringstream out;
  std::ostringstream err;
  const RanksOutcome outcome = run_rank_processes(spec, out, err);

  EXPECT_EQ(outcome.exit_code, 127);
  EXPECT_EQ(err.str(), "[rank 0] test: execv failed\n");
  EXPECT_EQ(out.str(), "");
  ASSERT_EQ(outcome.ends.size(), 1u);
  EXPECT_EQ(describe_end(outcome.ends[0]), "exited with 127");
}

TEST(RankProcesses, NoRanksEndAtOnce) {
  std::ostringstream out;
  std::ostringstream err;
  const RanksOutcome outcome = run_rank_processes(RankProcesses{}, out, err);
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_TRUE(outcome.ends.empty());
}

TEST(RankProcesses, AFreePortAndThisExecutable) {
  Result<uint16_t> port = free_tcp_port();
  ASSERT_TRUE(port) << port.status().to_string();
  EXPECT_NE(*port, 0);
  Result<std::string> self = self_executable();
  ASSERT_TRUE(self) << self.status().to_string();
  EXPECT_EQ(access(self->c_str(), X_OK), 0) << *self;
  EXPECT_NE(self->find("test_launch"), std::string::npos) << *self;
}

}  // namespace
}  // namespace tensorwire::launch
