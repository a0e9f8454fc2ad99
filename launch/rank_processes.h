// Local rank processes: the fork/exec half of `tensorwire launch`. Starts one
// process per rank on this host (fork + execv of its command line), forwards
// each rank's stdout and stderr line by line with a "[rank r] " prefix (whole
// lines only, so two ranks never mix within a line; a last line without a
// newline gets one), reaps them, and once a rank has failed (exited non-zero
// or by a signal) gives the others `grace` to end on their own, then SIGTERM,
// then SIGKILL `kill_delay` later, saying so (notice_prefix). What the
// command line around it decides (which ranks, their flags, the coordinator)
// stays with the caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"

namespace tensorwire::launch {

// The exit code a rank counts as when it did not exit by itself: killed by a
// signal, or lost (waitpid failed); also the combined code when a rank could
// not be started. (The same as tensorwire's "check failed".)
inline constexpr int kRankFailedExitCode = 1;

// The ranks to start, rank r running command_lines[r].
struct RankProcesses {
  // [0] is the executable's path (execv: no PATH search), the rest its arguments.
  std::vector<std::vector<std::string>> command_lines;
  // Once a rank has failed: how long the others get to end by themselves,
  // and how long after their SIGTERM they get SIGKILL.
  std::chrono::milliseconds grace{10'000};
  std::chrono::milliseconds kill_delay{2'000};
  // Before every error written to the error stream: "tensorwire: error: ".
  std::string error_prefix;
  // What a child whose execv failed writes to its stderr (it then exits 127).
  std::string exec_failed_line = "execv failed\n";
  // When not empty, the supervisor's own notices go to the output stream, each
  // a line with this prefix: the first rank that failed and how (at once),
  // and the ranks it stopped after the grace (SIGTERM) and after kill_delay
  // more (SIGKILL).
  std::string notice_prefix;
};

// How one rank's process ended.
struct RankEnd {
  bool started = false;  // false: never started (an earlier start failed)
  int wait_status = 0;   // waitpid's, when started
  // Sent SIGTERM after another rank failed and the grace ran out.
  bool stopped_after_failure = false;
};

// Its own exit code, or kRankFailedExitCode when a signal ended it.
int exit_code_of(const RankEnd& end);
// "exited with 3", "was killed by signal 9 (Killed)", with
// " (stopped by launch after another rank failed)" when it was.
std::string describe_end(const RankEnd& end);

enum class StartFailure { kNone, kNoPipe, kNoFork };

struct RanksOutcome {
  std::vector<RankEnd> ends;  // one per command line
  // The worst of the ranks' exit codes (the largest), at least
  // kRankFailedExitCode when a rank could not be started or waited for.
  int exit_code = 0;
  // A rank whose start failed (its pipes or its fork; the error was written
  // to err): the ranks after it were not started, those before it stopped at once.
  StartFailure start_failure = StartFailure::kNone;
};

// Starts every rank, forwards their output (stdout to out, stderr to err),
// and returns once every rank has ended and its output is passed on. Errors
// of the calls it makes (pipe2, fork, poll, waitpid, kill) are written to err.
RanksOutcome run_rank_processes(const RankProcesses& ranks, std::ostream& out, std::ostream& err);

// A TCP port on 127.0.0.1 nobody listens on right now (for a coordinator;
// another process may still take it before it is bound).
Result<uint16_t> free_tcp_port();

// The path of this process's executable (/proc/self/exe).
Result<std::string> self_executable();

}  // namespace tensorwire::launch
