#include "apps/tensorwire/verbs_run_command.h"

#include <csignal>
#include <cstdlib>
#include <charconv>
#include <optional>
#include <system_error>
#include <tuple>
#include <utility>

#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/output_file.h"
#include "apps/tensorwire/scenario_argument.h"
#include "report/chrome_trace_writer.h"
#include "report/results_json.h"
#include "report/summary.h"
#include "core/units_format.h"
#include "scenario/scenario_loader.h"

#ifdef TENSORWIRE_WITH_VERBS
#include "launch/rank_placement.h"
#include "runner/verbs_run.h"
#endif

namespace tensorwire::app {
namespace {

std::optional<uint64_t> parse_whole(std::string_view text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

}  // namespace

std::string verbs_only_flag_given(const VerbsArgs& a) {
  const VerbsArgs defaults;
  if (!a.rank.empty()) return "--rank";
  if (!a.world.empty()) return "--world";
  if (!a.coordinator.empty()) return "--coordinator";
  if (!a.device.empty()) return "--device";
  if (!a.address.empty()) return "--address";
  if (a.gpu_as_host) return "--gpu-as-host";
  if (a.busy_poll) return "--busy-poll";
  if (a.completion_channel) return "--completion-channel";
  if (a.setup_timeout != defaults.setup_timeout) return "--setup-timeout";
  if (a.phase_timeout != defaults.phase_timeout) return "--phase-timeout";
  if (a.peer_timeout != defaults.peer_timeout) return "--peer-timeout";
  if (!a.die_at.empty()) return "--die-at";
  if (!a.qp_error_at.empty()) return "--qp-error-at";
  return "";
}

std::string parse_timeout_seconds(const std::string& text, const char* flag, long long* ms) {
  double seconds = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, seconds);
  if (text.empty() || ec != std::errc() || ptr != end || !(seconds > 0) || seconds > 86400) {
    return std::string(flag) + " must be a number of seconds above 0 and at most 86400, not '" +
           text + "'";
  }
  *ms = static_cast<long long>(seconds * 1000);
  if (*ms < 1) *ms = 1;
  return "";
}

#ifndef TENSORWIRE_WITH_VERBS

bool verbs_backend_available() { return false; }

int verbs_run_command(const RunArgs&, std::ostream&, std::ostream& err) {
  err << kErrorPrefix
      << "this tensorwire was built without the verbs backend (pkg-config found no libibverbs "
         "and librdmacm; scripts/install_deps.sh installs them)\n";
  return kExitBadInput;
}

#else

bool verbs_backend_available() { return true; }

namespace {

// This rank and the world: from --rank/--world, else from the launcher's
// environment.
Result<launch::RankPlacement> placement_of(const VerbsArgs& v) {
  std::optional<uint64_t> flag_rank;
  std::optional<uint64_t> flag_world;
  if (!v.rank.empty()) {
    flag_rank = parse_whole(v.rank);
    if (!flag_rank) {
      return Status(StatusCode::kInvalidArgument,
                    "--rank must be a whole number, not '" + v.rank + "'");
    }
  }
  if (!v.world.empty()) {
    flag_world = parse_whole(v.world);
    if (!flag_world) {
      return Status(StatusCode::kInvalidArgument,
                    "--world must be a whole number, not '" + v.world + "'");
    }
  }
  return launch::rank_placement(flag_rank, flag_world,
                               [](const char* name) { return std::getenv(name); });
}

// Where the rank meets the others: the coordinator, the device and its
// address. Empty when the flags hold, else the error.
std::string set_endpoints(const VerbsArgs& v, VerbsRunOptions& options) {
  options.coordinator = v.coordinator;
  if (options.coordinator.empty()) {
    if (options.world > 1) {
      return "--coordinator HOST:PORT is required with --backend verbs and more than one "
             "rank (where rank 0 listens for the others)";
    }
    options.coordinator = "127.0.0.1:0";
  }
  options.device = v.device;
  if (options.device.empty()) {
    const char* env = std::getenv("TENSORWIRE_RDMA_DEVICE");
    if (env == nullptr || *env == '\0') {
      return "--device NAME is required with --backend verbs (or set TENSORWIRE_RDMA_DEVICE)";
    }
    options.device = env;
  }
  options.address = v.address;
  return "";
}

// How the rank waits: for completions when idle, and at most how long for
// set-up and for each phase. Empty when the flags hold, else the error.
std::string set_waiting(const VerbsArgs& v, VerbsRunOptions& options) {
  if (v.busy_poll && v.completion_channel) {
    return "--busy-poll and --completion-channel exclude each other (one never sleeps, the "
           "other sleeps in the channel)";
  }
  if (v.busy_poll) options.idle_spins_before_sleep = UINT32_MAX;
  options.use_completion_channel = v.completion_channel;
  long long ms = 0;
  if (std::string e = parse_timeout_seconds(v.setup_timeout, "--setup-timeout", &ms); !e.empty()) {
    return e;
  }
  options.setup_timeout = std::chrono::milliseconds(ms);
  if (std::string e = parse_timeout_seconds(v.phase_timeout, "--phase-timeout", &ms); !e.empty()) {
    return e;
  }
  options.phase_timeout = std::chrono::milliseconds(ms);
  if (std::string e = parse_timeout_seconds(v.peer_timeout, "--peer-timeout", &ms); !e.empty()) {
    return e;
  }
  options.peer_timeout = std::chrono::milliseconds(ms);
  return "";
}

// "RANK:N" of a fault-injection flag: both whole numbers, N at least `least`.
std::optional<std::pair<uint64_t, uint64_t>> parse_rank_and_count(const std::string& text,
                                                                  uint64_t least) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::optional<uint64_t> r = parse_whole(text.substr(0, colon));
  const std::optional<uint64_t> n = parse_whole(text.substr(colon + 1));
  if (!r.has_value() || !n.has_value() || n.value() < least) return std::nullopt;
  return std::pair{r.value(), n.value()};
}

// The fault-injection hooks (tests), each for one rank. --die-at RANK:STEP:
// that rank raises SIGKILL when it starts STEP. --qp-error-at RANK:N: that
// rank's queue pair of its Nth send-side work request goes to the error state.
std::string set_faults(const VerbsArgs& v, VerbsRunOptions& options) {
  if (!v.die_at.empty()) {
    const auto at = parse_rank_and_count(v.die_at, 0);
    if (!at) return "--die-at must be RANK:STEP, not '" + v.die_at + "'";
    if (at->first == options.rank) {
      options.die_at_step = at->second;
      options.die = [] { std::raise(SIGKILL); };
    }
  }
  if (!v.qp_error_at.empty()) {
    const auto at = parse_rank_and_count(v.qp_error_at, 1);
    if (!at) {
      return "--qp-error-at must be RANK:N with N at least 1, not '" + v.qp_error_at + "'";
    }
    if (at->first == options.rank) options.qp_error_after_posts = at->second;
  }
  return "";
}

// Rank 0 opens --json and --trace before the run, so that a path it cannot
// write is an error before anything connects. Empty, or the error.
std::string open_output_files(const RunArgs& args, RankId rank,
                              std::optional<OutputFile>& json_file,
                              std::optional<OutputFile>& trace_file) {
  for (auto [path_arg, flag, file] : {std::tuple{&args.json_path, "--json", &json_file},
                                      std::tuple{&args.trace_path, "--trace", &trace_file}}) {
    if (path_arg->empty() || rank != 0) continue;
    Result<OutputFile> opened = OutputFile::open(*path_arg, flag);
    if (!opened.is_ok()) return opened.status().message();
    file->emplace(std::move(opened).value());
  }
  return "";
}

// Writes `text` and closes the file; an error on err. Whether it was written.
bool write_output(OutputFile& file, std::string_view text, std::ostream& err) {
  Status st = file.write_and_close(text);
  if (!st.is_ok()) err << kErrorPrefix << st.message() << "\n";
  return st.is_ok();
}

// The run's summary on out, and rank 0's files. The exit code.
int report_verbs_run(const VerbsRunReport& r, const RunArgs& args,
                     std::optional<OutputFile>& json_file, std::optional<OutputFile>& trace_file,
                     report::ChromeTraceWriter& trace, std::ostream& out, std::ostream& err) {
  out << "\nrank " << r.rank << " of " << r.world << " on " << r.device << " (" << r.address
      << "), " << (r.whole_run ? "results of every rank" : "this rank's Recvs only") << "\n";
  out << report::summary_text(r.report);
  int code = r.report.passed() ? kExitOk : kExitCheckFailed;
  if (json_file) {
    report::MeasuredWallTimes measured;
    measured.step_ns = r.measured_step_ns;
    measured.transfer_ns = r.measured_transfer_ns;
    if (!write_output(*json_file, report::results_json_text(r.report, measured), err)) {
      code = kExitBadInput;
    } else {
      out << "results JSON: " << args.json_path << "\n";
    }
  }
  if (trace_file) {
    trace.set_metadata("clocks", r.trace_clocks);
    if (!write_output(*trace_file, trace.to_json(), err)) {
      code = kExitBadInput;
    } else {
      out << "trace: " << args.trace_path << " (" << format_count(trace.event_count())
          << " events on " << trace.track_count() << " tracks)\n";
    }
  }
  return code;
}

}  // namespace

int verbs_run_command(const RunArgs& args, std::ostream& out, std::ostream& err) {
  const auto bad = [&err](const std::string& message) {
    err << kErrorPrefix << message << "\n";
    return kExitBadInput;
  };
  if (args.timing_only) {
    return bad("--timing-only does not apply to --backend verbs: a real device always moves "
               "the bytes");
  }
  Result<launch::RankPlacement> placement = placement_of(args.verbs);
  if (!placement.is_ok()) return bad(placement.status().message());

  VerbsRunOptions options;
  options.rank = placement->rank;
  options.world = placement->world;
  options.gpu_as_host = args.verbs.gpu_as_host;
  options.has_seed = args.has_seed;
  options.seed = args.seed;
  std::string problem = set_endpoints(args.verbs, options);
  if (problem.empty()) problem = set_waiting(args.verbs, options);
  if (problem.empty()) problem = set_faults(args.verbs, options);
  if (!problem.empty()) return bad(problem);

  const std::string path = args.scenario_path.empty() ? default_scenario_path()
                                                      : args.scenario_path;
  std::optional<std::vector<ScenarioOverride>> overrides = parse_override_flags(args.overrides, err);
  if (!overrides) return kExitBadInput;
  std::optional<Scenario> loaded = load_scenario_argument(path, err, *overrides);
  if (!loaded) return kExitBadInput;
  if (Status st = check_scenario_for_verbs(*loaded, options.world, options.gpu_as_host);
      !st.is_ok()) {
    return bad(st.message());
  }
  // Rank 0 writes the files; every rank given --trace records its part.
  if (std::string e = run_output_paths_problem(args.json_path, args.trace_path, path);
      !e.empty()) {
    return bad(e);
  }
  std::optional<OutputFile> json_file;
  std::optional<OutputFile> trace_file;
  if (std::string e = open_output_files(args, options.rank, json_file, trace_file); !e.empty()) {
    return bad(e);
  }
  options.trace = !args.trace_path.empty();

  const uint64_t seed = args.has_seed ? args.seed : loaded->seed;
  out << "tensorwire run " << path << " --seed " << seed << " --backend verbs --rank "
      << options.rank << " --world " << options.world << " (" << placement->source << ") --device "
      << options.device << "\n"
      << std::flush;

  report::ChromeTraceWriter trace;
  trace.set_metadata("tool", "tensorwire");
  trace.set_metadata("scenario", loaded->name);
  trace.set_metadata("scenario_path", path);
  trace.set_metadata("seed", std::to_string(seed));
  trace.set_metadata("backend", "verbs");
  trace.set_metadata("device", options.device);
  Result<VerbsRunReport> result = run_verbs_rank(*loaded, options, trace);
  if (!result.is_ok()) {
    err << kErrorPrefix << "rank " << options.rank << ": " << result.status().message() << "\n";
    const StatusCode code = result.status().code();
    return code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound
               ? kExitBadInput
               : kExitCheckFailed;
  }
  if (result->died) return kExitCheckFailed;  // only in-process: the CLI's die raises SIGKILL
  return report_verbs_run(*result, args, json_file, trace_file, trace, out, err);
}

#endif

}  // namespace tensorwire::app
