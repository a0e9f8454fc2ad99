#include "launch/rank_processes.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "launch/system_call_error.h"

namespace tensorwire::launch {
namespace {

using Clock = std::chrono::steady_clock;

// One rank's output stream: bytes in, whole lines out with the prefix.
struct Forward {
  int fd = -1;
  std::string partial;
  std::ostream* to = nullptr;
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  int status = 0;  // waitpid's
  bool stopped_by_launch = false;
  Forward streams[2];
};

// What is known while waiting for the ranks: the worst exit code so far, when
// the first rank failed and when the others were told to stop.
struct Supervision {
  const RankProcesses* spec = nullptr;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  int worst = 0;
  std::optional<Clock::time_point> first_failure;
  std::optional<size_t> first_failed_rank;
  std::optional<Clock::time_point> terminated_at;
  bool killed = false;

  // A line of the supervisor's own, when asked for (notice_prefix).
  void notice(const std::string& text) const {
    if (spec->notice_prefix.empty()) return;
    *out << spec->notice_prefix << text << "\n" << std::flush;
  }

  // Writes "PREFIX CALL: strerror(errno)" to err.
  void error(const char* call) const {
    const std::string text = errno_text(errno);
    *err << spec->error_prefix << call << ": " << text << "\n";
  }
};

// The ranks' output pipes still open, and whose (rank, stream) each one is.
struct OpenStreams {
  std::vector<pollfd> fds;
  std::vector<std::pair<size_t, int>> owner;
};

void flush_lines(Forward& f, const std::string& prefix, bool all) {
  size_t start = 0;
  for (size_t nl; (nl = f.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    *f.to << prefix << std::string_view(f.partial).substr(start, nl + 1 - start);
  }
  f.partial.erase(0, start);
  if (all && !f.partial.empty()) {
    *f.to << prefix << f.partial << "\n";
    f.partial.clear();
  }
  f.to->flush();
}

void close_pipes(const int (&a)[2], const int (&b)[2]) {
  for (int fd : {a[0], a[1], b[0], b[1]}) {
    if (fd >= 0) close(fd);
  }
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(const int (&out_pipe)[2], const int (&err_pipe)[2],
                             const std::vector<char*>& argv, const std::string& exec_failed) {
  if (dup2(out_pipe[1], STDOUT_FILENO) < 0 || dup2(err_pipe[1], STDERR_FILENO) < 0) _exit(127);
  execv(argv[0], argv.data());
  (void)!write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
  _exit(127);
}

// Forks one rank running `argv_text`, its stdout and stderr into pipes that
// `rank` forwards to out and err. Failures are written to err.
StartFailure start_rank(const std::vector<std::string>& argv_text, Rank& rank, std::ostream& out,
                        const Supervision& sv) {
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    sv.error("pipe2");
    close_pipes(out_pipe, err_pipe);
    return StartFailure::kNoPipe;
  }
  std::vector<char*> argv;
  for (const std::string& a : argv_text) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  out.flush();
  sv.err->flush();
  const pid_t pid = fork();
  if (pid < 0) {
    sv.error("fork");
    close_pipes(out_pipe, err_pipe);
    return StartFailure::kNoFork;
  }
  if (pid == 0) exec_child(out_pipe, err_pipe, argv, sv.spec->exec_failed_line);
  close(out_pipe[1]);
  close(err_pipe[1]);
  rank.pid = pid;
  rank.running = true;
  rank.streams[0] = Forward{out_pipe[0], {}, &out};
  rank.streams[1] = Forward{err_pipe[0], {}, sv.err};
  return StartFailure::kNone;
}

OpenStreams open_streams(const std::vector<Rank>& ranks) {
  OpenStreams open;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (int s = 0; s < 2; ++s) {
      if (ranks[r].streams[s].fd >= 0) {
        open.fds.push_back(pollfd{ranks[r].streams[s].fd, POLLIN, 0});
        open.owner.emplace_back(r, s);
      }
    }
  }
  return open;
}

// Reads what poll found ready and passes on the whole lines, prefixed with
// the rank; a stream at its end passes on the rest and is closed.
void forward_output(std::vector<Rank>& ranks, const OpenStreams& open) {
  for (size_t i = 0; i < open.fds.size(); ++i) {
    if ((open.fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    auto [r, s] = open.owner[i];
    Forward& f = ranks[r].streams[s];
    const std::string prefix = "[rank " + std::to_string(r) + "] ";
    char buf[4096];
    const ssize_t got = read(f.fd, buf, sizeof buf);
    if (got > 0) {
      f.partial.append(buf, static_cast<size_t>(got));
      flush_lines(f, prefix, false);
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      flush_lines(f, prefix, true);
      close(f.fd);
      f.fd = -1;
    }
  }
}

// "10 s", "0.05 s".
std::string seconds_text(std::chrono::milliseconds ms) {
  const long long whole = ms.count() / 1000;
  const long long rest = ms.count() % 1000;
  if (rest == 0) return std::to_string(whole) + " s";
  char text[32];
  std::snprintf(text, sizeof text, "%lld.%03lld", whole, rest);
  std::string t = text;
  while (t.back() == '0') t.pop_back();
  return t + " s";
}

// Collects the ranks that have ended, noting the first failure. Of ranks
// found failed in one pass, one killed by a signal counts as the first: the
// others most likely failed because it died (they notice within
// milliseconds, within the same pass), and launch's report should name it.
void reap_ended_ranks(std::vector<Rank>& ranks, Supervision& sv) {
  std::optional<size_t> first;
  for (Rank& k : ranks) {
    if (!k.running) continue;
    int status = 0;
    const pid_t w = waitpid(k.pid, &status, WNOHANG);
    if (w == 0) continue;
    k.running = false;
    if (w < 0) {
      sv.error("waitpid");
      sv.worst = std::max(sv.worst, kRankFailedExitCode);
      continue;
    }
    k.status = status;
    const int code = exit_code_of(RankEnd{true, status, false});
    sv.worst = std::max(sv.worst, code);
    if (code == 0 || sv.first_failure) continue;
    if (!first || (WIFSIGNALED(status) && !WIFSIGNALED(ranks[*first].status))) {
      first = static_cast<size_t>(&k - ranks.data());
    }
  }
  if (!first) return;
  sv.first_failure = Clock::now();
  sv.first_failed_rank = *first;
  sv.notice("rank " + std::to_string(*first) + " " +
            describe_end(RankEnd{true, ranks[*first].status, false}) + "; the others get " +
            seconds_text(sv.spec->grace) + " to end on their own");
}

// The ranks still running, "rank 0, rank 2".
std::string running_ranks(const std::vector<Rank>& ranks) {
  std::string names;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].running) names += (names.empty() ? "rank " : ", rank ") + std::to_string(r);
  }
  return names;
}

// Once a rank has failed and the grace is over, SIGTERM to those still
// running; kill_delay later, SIGKILL to those still running then.
void stop_ranks_after_grace(std::vector<Rank>& ranks, Supervision& sv) {
  const auto now = Clock::now();
  if (sv.first_failure && !sv.terminated_at && now - *sv.first_failure > sv.spec->grace) {
    if (std::string names = running_ranks(ranks); !names.empty()) {
      const std::string failed = sv.first_failed_rank
                                     ? "rank " + std::to_string(*sv.first_failed_rank) + " failed"
                                     : "a rank could not be started";
      sv.notice(names + " still running " + seconds_text(sv.spec->grace) + " after " + failed +
                ": stopping (SIGTERM)");
    }
    for (Rank& k : ranks) {
      if (!k.running) continue;
      k.stopped_by_launch = true;
      if (kill(k.pid, SIGTERM) != 0 && errno != ESRCH) sv.error("kill(SIGTERM)");
    }
    sv.terminated_at = now;
  }
  if (sv.terminated_at && now - *sv.terminated_at > sv.spec->kill_delay) {
    if (std::string names = running_ranks(ranks); !sv.killed && !names.empty()) {
      sv.notice(names + " still running " + seconds_text(sv.spec->kill_delay) +
                " after SIGTERM: killing (SIGKILL)");
      sv.killed = true;
    }
    for (Rank& k : ranks) {
      if (k.running && kill(k.pid, SIGKILL) != 0 && errno != ESRCH) sv.error("kill(SIGKILL)");
    }
  }
}

// Forwards the ranks' output and waits until every rank has ended and every
// pipe is closed.
void supervise_ranks(std::vector<Rank>& ranks, Supervision& sv) {
  // A rank that could not be started counts as failed long enough ago that
  // the others are stopped at once.
  if (sv.worst != 0) sv.first_failure = Clock::now() - sv.spec->grace;
  for (;;) {
    OpenStreams open = open_streams(ranks);
    const bool any_running =
        std::any_of(ranks.begin(), ranks.end(), [](const Rank& k) { return k.running; });
    if (open.fds.empty() && !any_running) break;
    if (!open.fds.empty()) {
      const int n = poll(open.fds.data(), open.fds.size(), 100);
      if (n < 0 && errno != EINTR) {
        sv.error("poll");
        sv.worst = std::max(sv.worst, kRankFailedExitCode);
        break;
      }
      forward_output(ranks, open);
    } else {
      usleep(50'000);
    }
    reap_ended_ranks(ranks, sv);
    stop_ranks_after_grace(ranks, sv);
  }
}

}  // namespace

int exit_code_of(const RankEnd& end) {
  if (WIFEXITED(end.wait_status)) return WEXITSTATUS(end.wait_status);
  return kRankFailedExitCode;  // killed by a signal
}

std::string describe_end(const RankEnd& end) {
  const int status = end.wait_status;
  std::string text;
  if (WIFEXITED(status)) {
    text = "exited with " + std::to_string(WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    text = "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  } else {
    text = "ended with wait status " + std::to_string(status);
  }
  if (end.stopped_after_failure) text += " (stopped by launch after another rank failed)";
  return text;
}

RanksOutcome run_rank_processes(const RankProcesses& spec, std::ostream& out, std::ostream& err) {
  std::vector<Rank> ranks(spec.command_lines.size());
  Supervision sv;
  sv.spec = &spec;
  sv.out = &out;
  sv.err = &err;
  RanksOutcome outcome;
  for (size_t r = 0; r < ranks.size(); ++r) {
    outcome.start_failure = start_rank(spec.command_lines[r], ranks[r], out, sv);
    if (outcome.start_failure != StartFailure::kNone) {
      sv.worst = kRankFailedExitCode;
      break;
    }
  }
  supervise_ranks(ranks, sv);
  outcome.exit_code = sv.worst;
  for (const Rank& k : ranks) {
    outcome.ends.push_back(RankEnd{k.pid >= 0, k.status, k.stopped_by_launch});
  }
  return outcome;
}

// Another process could take the port before the coordinator binds it; the
// coordinator then fails with "address in use", naming it.
Result<uint16_t> free_tcp_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return call_failed("socket(AF_INET, SOCK_STREAM)", errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  Status st = Status::ok();
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    st = call_failed("bind(127.0.0.1:0)", errno);
  } else if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    st = call_failed("getsockname(127.0.0.1:0)", errno);
  }
  if (close(fd) != 0 && st.is_ok()) st = call_failed("close(socket)", errno);
  if (!st.is_ok()) return st;
  return static_cast<uint16_t>(ntohs(addr.sin_port));
}

Result<std::string> self_executable() {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n < 0) return call_failed("readlink(/proc/self/exe)", errno);
  return std::string(buf.data(), static_cast<size_t>(n));
}

}  // namespace tensorwire::launch
