#include "apps/tensorwire/launch_command.h"

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
#include <charconv>
#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/output_file.h"
#include "apps/tensorwire/scenario_argument.h"
#include "apps/tensorwire/verbs_run_command.h"

#ifdef TENSORWIRE_WITH_VERBS
#include "runner/verbs_run.h"
#endif

namespace tensorwire::app {
namespace {

// At most this many local ranks: more would only oversubscribe one machine.
constexpr uint32_t kMaxLocalRanks = 64;

std::string errno_message(const char* call) {
  return std::string(call) + ": " + std::strerror(errno);
}

// A TCP port nobody listens on right now, for rank 0's coordinator. (Another
// process could take it before rank 0 binds it; rank 0 then fails with
// "address in use", naming it, and launch exits non-zero.)
std::optional<uint16_t> free_tcp_port(std::string* error) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = errno_message("socket(AF_INET, SOCK_STREAM)");
    return std::nullopt;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  std::optional<uint16_t> port;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *error = errno_message("bind(127.0.0.1:0)");
  } else if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    *error = errno_message("getsockname(127.0.0.1:0)");
  } else {
    port = ntohs(addr.sin_port);
  }
  if (close(fd) != 0 && port) {
    *error = errno_message("close(socket)");
    port.reset();
  }
  return port;
}

std::optional<std::string> self_executable(std::string* error) {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n < 0) {
    *error = errno_message("readlink(/proc/self/exe)");
    return std::nullopt;
  }
  return std::string(buf.data(), static_cast<size_t>(n));
}

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

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return kExitCheckFailed;  // killed by a signal
}

std::string describe_end(int status) {
  if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

// Worse is larger, except that an internal error (70) outranks everything.
int worse(int a, int b) { return std::max(a, b); }

}  // namespace

CLI::App* add_launch_command(CLI::App& app, LaunchArgs& args) {
  CLI::App* launch = app.add_subcommand(
      "launch", "Start N local ranks of 'run --backend verbs' and wait for them all");
  launch->add_option("-n,--ranks", args.ranks, "How many ranks to start (1 to 64)")
      ->type_name("N")
      ->required();
  launch->add_option("SCENARIO", args.scenario_path, "Scenario file (TOML)")
      ->type_name("")
      ->required();
  add_seed_option(*launch, args.seed, args.has_seed);
  launch->add_option("--json", args.json_path, "Rank 0 writes the results as JSON")
      ->type_name("FILE");
  launch->add_option("--trace", args.trace_path,
                     "Rank 0 writes a Chrome trace-event JSON file of every rank (ui.perfetto.dev)")
      ->type_name("FILE");
  launch->add_option("--grace", args.grace,
                     "Seconds the other ranks get to end on their own once one has failed, "
                     "before they are stopped (default 10)")
      ->type_name("SECONDS");
  add_verbs_options(*launch, args.verbs, false);
  return launch;
}

std::vector<std::string> rank_command_line(const LaunchArgs& args, const std::string& self,
                                           uint32_t rank, uint32_t world,
                                           const std::string& coordinator) {
  const VerbsArgs& v = args.verbs;
  const VerbsArgs defaults;
  std::vector<std::string> argv = {self,      "run",     args.scenario_path,     "--backend",
                                   "verbs",   "--rank",  std::to_string(rank),   "--world",
                                   std::to_string(world), "--coordinator", coordinator};
  if (args.has_seed) argv.insert(argv.end(), {"--seed", std::to_string(args.seed)});
  if (!v.device.empty()) argv.insert(argv.end(), {"--device", v.device});
  if (!v.address.empty()) argv.insert(argv.end(), {"--address", v.address});
  if (v.gpu_as_host) argv.push_back("--gpu-as-host");
  if (v.busy_poll) argv.push_back("--busy-poll");
  if (v.completion_channel) argv.push_back("--completion-channel");
  if (v.setup_timeout != defaults.setup_timeout) {
    argv.insert(argv.end(), {"--setup-timeout", v.setup_timeout});
  }
  if (v.phase_timeout != defaults.phase_timeout) {
    argv.insert(argv.end(), {"--phase-timeout", v.phase_timeout});
  }
  if (!v.die_at.empty()) argv.insert(argv.end(), {"--die-at", v.die_at});
  if (rank == 0 && !args.json_path.empty()) argv.insert(argv.end(), {"--json", args.json_path});
  // Every rank records its part of the trace; rank 0 writes the file.
  if (!args.trace_path.empty()) argv.insert(argv.end(), {"--trace", args.trace_path});
  return argv;
}

namespace {

// launch's own flags, checked before anything starts. Empty when they hold;
// then *world is the rank count and *grace_ms the --grace.
std::string launch_flags_problem(const LaunchArgs& args, uint64_t* world, long long* grace_ms) {
  const std::string& t = args.ranks;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), *world);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size() || *world == 0 ||
      *world > kMaxLocalRanks) {
    return "-n must be a whole number of ranks from 1 to " + std::to_string(kMaxLocalRanks) +
           ", not '" + t + "'";
  }
  if (std::string e = parse_timeout_seconds(args.grace, "--grace", grace_ms); !e.empty()) {
    return e;
  }
  long long ms = 0;
  if (std::string e = parse_timeout_seconds(args.verbs.setup_timeout, "--setup-timeout", &ms);
      !e.empty()) {
    return e;
  }
  if (std::string e = parse_timeout_seconds(args.verbs.phase_timeout, "--phase-timeout", &ms);
      !e.empty()) {
    return e;
  }
  if (!args.trace_path.empty() && !args.json_path.empty() &&
      same_file_path(args.trace_path, args.json_path)) {
    return "--trace and --json name the same file '" + args.trace_path + "'";
  }
  return "";
}

enum class RankStart { kStarted, kNoPipe, kNoFork };

// Forks one rank running `argv_text`, its stdout and stderr into pipes that
// `rank` forwards to out and err. Failures are written to err.
RankStart start_rank(const std::vector<std::string>& argv_text, Rank& rank, std::ostream& out,
                     std::ostream& err) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    err << kErrorPrefix << errno_message("pipe2") << "\n";
    return RankStart::kNoPipe;
  }
  std::vector<char*> argv;
  for (const std::string& a : argv_text) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  out.flush();
  err.flush();
  const pid_t pid = fork();
  if (pid < 0) {
    err << kErrorPrefix << errno_message("fork") << "\n";
    close(out_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[0]);
    close(err_pipe[1]);
    return RankStart::kNoFork;
  }
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    if (dup2(out_pipe[1], STDOUT_FILENO) < 0 || dup2(err_pipe[1], STDERR_FILENO) < 0) _exit(127);
    execv(argv[0], argv.data());
    const char* what = "tensorwire launch: execv failed\n";
    (void)!write(STDERR_FILENO, what, std::strlen(what));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  rank.pid = pid;
  rank.running = true;
  rank.streams[0] = Forward{out_pipe[0], {}, &out};
  rank.streams[1] = Forward{err_pipe[0], {}, &err};
  return RankStart::kStarted;
}

using Clock = std::chrono::steady_clock;

// What launch knows while it waits for the ranks: the worst exit code so far,
// and when the first rank failed and when the others were told to stop.
struct Supervision {
  std::chrono::milliseconds grace{0};
  int worst = kExitOk;
  std::optional<Clock::time_point> first_failure;
  std::optional<Clock::time_point> terminated_at;
};

// The ranks' output pipes still open, and whose (rank, stream) each one is.
struct OpenStreams {
  std::vector<pollfd> fds;
  std::vector<std::pair<size_t, int>> owner;
};

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

// Collects the ranks that have ended, noting the first failure.
void reap_ended_ranks(std::vector<Rank>& ranks, Supervision& sv, std::ostream& err) {
  for (Rank& k : ranks) {
    if (!k.running) continue;
    int status = 0;
    const pid_t w = waitpid(k.pid, &status, WNOHANG);
    if (w == 0) continue;
    if (w < 0) {
      err << kErrorPrefix << errno_message("waitpid") << "\n";
      k.running = false;
      sv.worst = worse(sv.worst, kExitCheckFailed);
      continue;
    }
    k.running = false;
    k.status = status;
    const int code = exit_code_of(status);
    sv.worst = worse(sv.worst, code);
    if (code != kExitOk && !sv.first_failure) sv.first_failure = Clock::now();
  }
}

// Once a rank has failed and the grace is over, SIGTERM to those still
// running; 2 s later, SIGKILL to those still running then.
void stop_ranks_after_grace(std::vector<Rank>& ranks, Supervision& sv, std::ostream& err) {
  const auto now = Clock::now();
  if (sv.first_failure && !sv.terminated_at && now - *sv.first_failure > sv.grace) {
    for (Rank& k : ranks) {
      if (!k.running) continue;
      k.stopped_by_launch = true;
      if (kill(k.pid, SIGTERM) != 0 && errno != ESRCH) {
        err << kErrorPrefix << errno_message("kill(SIGTERM)") << "\n";
      }
    }
    sv.terminated_at = now;
  }
  if (sv.terminated_at && now - *sv.terminated_at > std::chrono::seconds(2)) {
    for (Rank& k : ranks) {
      if (k.running && kill(k.pid, SIGKILL) != 0 && errno != ESRCH) {
        err << kErrorPrefix << errno_message("kill(SIGKILL)") << "\n";
      }
    }
  }
}

// Forwards the ranks' output and waits until every rank has ended and every
// pipe is closed. The worst exit code.
int supervise_ranks(std::vector<Rank>& ranks, Supervision sv, std::ostream& err) {
  // A rank that could not be started counts as failed long enough ago that
  // the others are stopped at once.
  if (sv.worst != kExitOk) sv.first_failure = Clock::now() - sv.grace;
  for (;;) {
    OpenStreams open = open_streams(ranks);
    const bool any_running =
        std::any_of(ranks.begin(), ranks.end(), [](const Rank& k) { return k.running; });
    if (open.fds.empty() && !any_running) break;
    if (!open.fds.empty()) {
      const int n = poll(open.fds.data(), open.fds.size(), 100);
      if (n < 0 && errno != EINTR) {
        err << kErrorPrefix << errno_message("poll") << "\n";
        sv.worst = worse(sv.worst, kExitCheckFailed);
        break;
      }
      forward_output(ranks, open);
    } else {
      usleep(50'000);
    }
    reap_ended_ranks(ranks, sv, err);
    stop_ranks_after_grace(ranks, sv, err);
  }
  return sv.worst;
}

void report_rank_ends(const std::vector<Rank>& ranks, std::ostream& out) {
  out << "tensorwire launch:";
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].pid < 0) continue;
    out << (r == 0 ? " " : "; ") << "rank " << r << " " << describe_end(ranks[r].status)
        << (ranks[r].stopped_by_launch ? " (stopped by launch after another rank failed)" : "");
  }
  out << "\n";
}

}  // namespace

int launch_command(const LaunchArgs& args, std::ostream& out, std::ostream& err) {
  const auto bad = [&err](const std::string& message) {
    err << kErrorPrefix << message << "\n";
    return kExitBadInput;
  };
  if (!verbs_backend_available()) {
    return bad("launch runs ranks on the verbs backend, and this tensorwire was built without "
               "it (no libibverbs/librdmacm)");
  }
  uint64_t world = 0;
  long long grace_ms = 0;
  if (std::string e = launch_flags_problem(args, &world, &grace_ms); !e.empty()) return bad(e);
  // One clear error here rather than the same one from every rank.
  std::optional<Scenario> loaded = load_scenario_argument(args.scenario_path, err);
  if (!loaded) return kExitBadInput;
#ifdef TENSORWIRE_WITH_VERBS
  if (Status st = check_scenario_for_verbs(*loaded, static_cast<uint32_t>(world),
                                           args.verbs.gpu_as_host);
      !st.is_ok()) {
    return bad(st.message());
  }
#endif
  std::string error;
  std::optional<uint16_t> port = free_tcp_port(&error);
  if (!port) return bad("cannot find a free port for the coordinator: " + error);
  std::optional<std::string> self = self_executable(&error);
  if (!self) return bad(error);
  const std::string coordinator = "127.0.0.1:" + std::to_string(*port);
  out << "tensorwire launch: " << world << " ranks of " << args.scenario_path
      << ", coordinator " << coordinator << "\n"
      << std::flush;

  std::vector<Rank> ranks(world);
  Supervision sv;
  sv.grace = std::chrono::milliseconds(grace_ms);
  for (uint32_t r = 0; r < world; ++r) {
    const RankStart started = start_rank(
        rank_command_line(args, *self, r, static_cast<uint32_t>(world), coordinator), ranks[r],
        out, err);
    if (started == RankStart::kNoPipe) return kExitBadInput;
    if (started == RankStart::kNoFork) {
      sv.worst = kExitCheckFailed;
      break;
    }
  }
  const int worst = supervise_ranks(ranks, sv, err);
  report_rank_ends(ranks, out);
  return worst;
}

}  // namespace tensorwire::app
