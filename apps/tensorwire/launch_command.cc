#include "apps/tensorwire/launch_command.h"

#include <charconv>
#include <chrono>
#include <optional>
#include <vector>

#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/option_checks.h"
#include "apps/tensorwire/output_file.h"
#include "apps/tensorwire/scenario_argument.h"
#include "apps/tensorwire/verbs_run_command.h"
#include "launch/rank_processes.h"

#ifdef TENSORWIRE_WITH_VERBS
#include "runner/verbs_run.h"
#endif

namespace tensorwire::app {
namespace {

// At most this many local ranks: more would only oversubscribe one machine.
constexpr uint32_t kMaxLocalRanks = 64;

static_assert(launch::kRankFailedExitCode == kExitCheckFailed,
              "a rank killed by a signal counts as a failed check");

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
      ->type_name("FILE")
      ->check(non_empty_value());
  launch->add_option("--trace", args.trace_path,
                     "Rank 0 writes a Chrome trace-event JSON file of every rank (ui.perfetto.dev)")
      ->type_name("FILE")
      ->check(non_empty_value());
  launch->add_option("--grace", args.grace,
                     "Seconds the other ranks get to end on their own once one has failed, "
                     "before they are stopped (SIGTERM, then SIGKILL 2 s later); default: "
                     "--peer-timeout")
      ->type_name("SECONDS");
  add_verbs_options(*launch, args.verbs, false);
  add_override_option(*launch, args.overrides);
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
  for (const std::string& o : args.overrides) argv.insert(argv.end(), {"--set", o});
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
  if (v.peer_timeout != defaults.peer_timeout) {
    argv.insert(argv.end(), {"--peer-timeout", v.peer_timeout});
  }
  if (!v.die_at.empty()) argv.insert(argv.end(), {"--die-at", v.die_at});
  if (!v.qp_error_at.empty()) argv.insert(argv.end(), {"--qp-error-at", v.qp_error_at});
  if (rank == 0 && !args.json_path.empty()) argv.insert(argv.end(), {"--json", args.json_path});
  // Every rank records its part of the trace; rank 0 writes the file.
  if (!args.trace_path.empty()) argv.insert(argv.end(), {"--trace", args.trace_path});
  return argv;
}

namespace {

// launch's own flags, checked before anything starts. Empty when they hold;
// then *world is the rank count and *grace_ms the --grace (default: the
// --peer-timeout).
std::string launch_flags_problem(const LaunchArgs& args, uint64_t* world, long long* grace_ms) {
  const std::string& t = args.ranks;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), *world);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size() || *world == 0 ||
      *world > kMaxLocalRanks) {
    return "-n must be a whole number of ranks from 1 to " + std::to_string(kMaxLocalRanks) +
           ", not '" + t + "'";
  }
  // Once a rank failed, the others should notice within the peer timeout;
  // by default launch stops those that have not after as long.
  if (std::string e = parse_timeout_seconds(args.verbs.peer_timeout, "--peer-timeout", grace_ms);
      !e.empty()) {
    return e;
  }
  if (!args.grace.empty()) {
    if (std::string e = parse_timeout_seconds(args.grace, "--grace", grace_ms); !e.empty()) {
      return e;
    }
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
  return run_output_paths_problem(args.json_path, args.trace_path, args.scenario_path);
}

void report_rank_ends(const std::vector<launch::RankEnd>& ends, std::ostream& out) {
  out << "tensorwire launch:";
  for (size_t r = 0; r < ends.size(); ++r) {
    if (!ends[r].started) continue;
    out << (r == 0 ? " " : "; ") << "rank " << r << " " << launch::describe_end(ends[r]);
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
  std::optional<std::vector<ScenarioOverride>> overrides = parse_override_flags(args.overrides, err);
  if (!overrides) return kExitBadInput;
  std::optional<Scenario> loaded = load_scenario_argument(args.scenario_path, err, *overrides);
  if (!loaded) return kExitBadInput;
#ifdef TENSORWIRE_WITH_VERBS
  if (Status st = check_scenario_for_verbs(*loaded, static_cast<uint32_t>(world),
                                           args.verbs.gpu_as_host);
      !st.is_ok()) {
    return bad(st.message());
  }
#endif
  Result<uint16_t> port = launch::free_tcp_port();
  if (!port) return bad("cannot find a free port for the coordinator: " + port.status().message());
  Result<std::string> self = launch::self_executable();
  if (!self) return bad(self.status().message());
  const std::string coordinator = "127.0.0.1:" + std::to_string(*port);
  out << "tensorwire launch: " << world << " ranks of " << args.scenario_path
      << ", coordinator " << coordinator << "\n"
      << std::flush;

  launch::RankProcesses ranks;
  ranks.grace = std::chrono::milliseconds(grace_ms);
  ranks.error_prefix = kErrorPrefix;
  ranks.exec_failed_line = "tensorwire launch: execv failed\n";
  ranks.notice_prefix = "tensorwire launch: ";
  for (uint32_t r = 0; r < world; ++r) {
    ranks.command_lines.push_back(
        rank_command_line(args, *self, r, static_cast<uint32_t>(world), coordinator));
  }
  const launch::RanksOutcome outcome = launch::run_rank_processes(ranks, out, err);
  if (outcome.start_failure == launch::StartFailure::kNoPipe) return kExitBadInput;
  report_rank_ends(outcome.ends, out);
  return outcome.exit_code;
}

}  // namespace tensorwire::app
