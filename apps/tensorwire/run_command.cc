#include "apps/tensorwire/run_command.h"

#include <charconv>
#include <exception>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/memory_limit.h"
#include "apps/tensorwire/option_checks.h"
#include "apps/tensorwire/output_file.h"
#include "apps/tensorwire/scenario_argument.h"
#include "apps/tensorwire/verbs_run_command.h"
#include "core/trace_sink.h"
#include "report/chrome_trace_writer.h"
#include "report/content_hash.h"
#include "report/progress_bar.h"
#include "report/coverage_summary.h"
#include "report/results_json.h"
#include "report/summary.h"
#include "core/units_format.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::app {
namespace {

// Decimal digits only, within uint64: CLI11's own conversion would wrap "-3"
// and saturate overflow, silently running a different seed than was asked.
std::optional<uint64_t> parse_seed(std::string_view text) {
  uint64_t seed = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, seed);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return seed;
}

}  // namespace

void add_seed_option(CLI::App& command, uint64_t& seed_out, bool& has_seed,
                     const std::string& description) {
  command.add_option_function<std::string>(
         "--seed",
         [&seed_out, &has_seed](const std::string& text) {
           seed_out = *parse_seed(text);  // the check below has accepted it
           has_seed = true;
         },
         description)
      ->type_name("N")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return parse_seed(text) ? std::string()
                                    : "seed must be a whole number from 0 to 2^64-1, not '" +
                                          text + "'";
          },
          "", "SEED"));
}

void add_verbs_options(CLI::App& command, VerbsArgs& args, bool with_placement) {
  const char* group = "Verbs backend (a real RDMA device)";
  if (with_placement) {
    command.add_option("--rank", args.rank,
                       "This process's rank (default: OMPI_COMM_WORLD_RANK or SLURM_PROCID)")
        ->type_name("R")
        ->group(group);
    command.add_option("--world", args.world,
                       "Number of ranks (default: OMPI_COMM_WORLD_SIZE or SLURM_NTASKS)")
        ->type_name("W")
        ->group(group);
    command.add_option("--coordinator", args.coordinator,
                       "Where rank 0 listens for the others (TCP bootstrap)")
        ->type_name("HOST:PORT")
        ->group(group)
        ->check(non_empty_value());
  }
  command.add_option("--device", args.device,
                     "RDMA device (default: $TENSORWIRE_RDMA_DEVICE), e.g. rxe0")
      ->type_name("NAME")
      ->group(group)
      ->check(non_empty_value());
  command.add_option("--address", args.address,
                     "This rank's IPv4 address on the device (default: the first IPv4 in the "
                     "device's GID table)")
      ->type_name("A.B.C.D")
      ->group(group)
      ->check(ipv4_address_value());
  command.add_flag("--gpu-as-host", args.gpu_as_host,
                   "Place GPU tensors in host memory (for machines without the CUDA GPUs the scenario names)")
      ->group(group);
  command.add_flag("--busy-poll", args.busy_poll,
                   "Poll the completion queue without ever sleeping when idle (lowest latency; "
                   "each rank keeps a core busy). Default: sleep 50 us per turn after 256 idle turns")
      ->group(group);
  command.add_flag("--completion-channel", args.completion_channel,
                   "When idle, sleep in the completion channel until the next completion (at most "
                   "1 ms at a time) instead of 50 us per turn")
      ->group(group);
  command.add_option("--setup-timeout", args.setup_timeout,
                     "Seconds each set-up step may take (join, connect, barriers); default 60")
      ->type_name("SECONDS")
      ->group(group);
  command.add_option("--phase-timeout", args.phase_timeout,
                     "Seconds each phase may take (this rank's Recvs, then the barrier that "
                     "ends the phase); default 60")
      ->type_name("SECONDS")
      ->group(group);
  command.add_option("--peer-timeout", args.peer_timeout,
                     "Seconds within which a rank notices a lost peer and fails naming it (a "
                     "peer whose process ended is seen at once; one whose host went silent "
                     "takes this long); launch stops ranks still running this long after one "
                     "failed; default 5")
      ->type_name("SECONDS")
      ->group(group);
  // Test hooks, not for users: hidden from --help (empty group).
  command.add_option("--die-at", args.die_at, "RANK:STEP: that rank kills itself (SIGKILL) "
                                              "when it starts that step")
      ->type_name("RANK:STEP")
      ->group("");
  command.add_option("--qp-error-at", args.qp_error_at,
                     "RANK:N: that rank moves the queue pair of its Nth send-side work request "
                     "to the error state right after posting it")
      ->type_name("RANK:N")
      ->group("");
}

void add_override_option(CLI::App& command, std::vector<std::string>& overrides) {
  command
      .add_option("--set", overrides,
                  "Replace one scenario key, e.g. --set cluster.nic_bandwidth=200Gbps or "
                  "--set 'workload.tensor[*].bytes=1MiB' (repeatable; VALUE is TOML, or a string "
                  "when it is not)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
}

CLI::App* add_run_command(CLI::App& app, RunArgs& args) {
  CLI::App* run = app.add_subcommand(
      "run", "Run a scenario on the deterministic simulator (or one rank of it on a real RDMA "
             "device: --backend verbs) and print a summary");
  run->add_option("SCENARIO", args.scenario_path,
                  "Scenario file (TOML). Default: the quickstart scenario")
      ->type_name("");
  add_seed_option(*run, args.seed, args.has_seed);
  run->add_option("--backend", args.backend,
                  "sim (default): the deterministic simulator; verbs: this process runs one "
                  "rank on a real RDMA device")
      ->type_name("sim|verbs");
  add_verbs_options(*run, args.verbs, true);
  run->add_option("--trace", args.trace_path,
                  "Write a Chrome trace-event JSON file (open it in ui.perfetto.dev)")
      ->type_name("FILE")
      ->check(non_empty_value());
  run->add_option("--json", args.json_path, "Write the results as JSON")->type_name("FILE")
      ->check(non_empty_value());
  run->add_flag("--timing-only", args.timing_only,
                "Simulate timing only: move no payload bytes (for large scenarios)");
  add_memory_limit_option(*run, args.memory_limit);
  add_override_option(*run, args.overrides);
  return run;
}

namespace {

// --trace and --json, opened before the run so that a bad path fails fast.
struct RunOutputs {
  std::optional<OutputFile> trace_file;
  std::optional<OutputFile> json_file;
};

bool open_output(const std::string& file_path, const char* flag, std::optional<OutputFile>& file,
                 std::ostream& err) {
  if (file_path.empty()) return true;
  Result<OutputFile> opened = OutputFile::open(file_path, flag);
  if (!opened.is_ok()) {
    err << kErrorPrefix << opened.status().message() << "\n";
    return false;
  }
  file.emplace(std::move(opened).value());
  return true;
}

std::optional<RunOutputs> open_run_outputs(const RunArgs& args, const std::string& scenario_path,
                                           std::ostream& err) {
  if (std::string e = run_output_paths_problem(args.json_path, args.trace_path, scenario_path); !e.empty()) {
    err << kErrorPrefix << e << "\n";
    return std::nullopt;
  }
  RunOutputs outputs;
  if (!open_output(args.trace_path, "--trace", outputs.trace_file, err) ||
      !open_output(args.json_path, "--json", outputs.json_file, err)) {
    return std::nullopt;
  }
  return outputs;
}

// Writes what the run produced; the exit code becomes bad input when a write fails.
int write_run_outputs(const RunArgs& args, RunOutputs& outputs, const RunReport& result,
                      const report::ChromeTraceWriter& chrome_trace, std::ostream& out,
                      std::ostream& err) {
  int code = result.passed() ? kExitOk : kExitCheckFailed;
  if (outputs.json_file) {
    Status st = outputs.json_file->write_and_close(report::results_json_text(result));
    if (!st.is_ok()) {
      err << kErrorPrefix << st.message() << "\n";
      code = kExitBadInput;
    } else {
      out << "results JSON: " << args.json_path << "\n";
    }
  }
  if (outputs.trace_file) {
    const std::string text = chrome_trace.to_json();
    Status st = outputs.trace_file->write_and_close(text);
    if (!st.is_ok()) {
      err << kErrorPrefix << st.message() << "\n";
      code = kExitBadInput;
    } else {
      out << "trace: " << args.trace_path << " ("
          << format_count(chrome_trace.event_count()) << " events on "
          << chrome_trace.track_count() << " tracks, hash "
          << report::format_hash(report::fnv1a_64(text)) << ")\n";
    }
  }
  return code;
}

// What the progress bar counts: steps of a point-to-point workload, the
// protocol's own unit for a collective ("destinations").
std::string progress_unit_of(const Scenario& scenario) {
  const CollectiveProtocol* collective = scenario.protocol.descriptor().collective();
  return collective != nullptr ? std::string(collective->progress_unit()) : "steps";
}

// Bounds what a payload-mode run may hold (--memory-limit) and estimates it
// before anything is allocated: the estimate when it is large, or an error
// when it passes the limit (then false: the run must not start).
bool bound_payload_memory(const RunArgs& args, const std::string& path, bool payload,
                          Scenario& scenario, std::ostream& out, std::ostream& err) {
  if (!payload) {
    scenario.payload_limit_bytes_total = memory_limit_bytes(args.memory_limit);
    return true;
  }
  const std::optional<std::string> over = payload_memory_over_limit(args.memory_limit, scenario, out);
  if (!over) return true;
  err << kErrorPrefix << "'" << path << "' is too big to run in payload mode here: " << *over
      << "; run it in timing mode ([run] mode = \"timing\", or --timing-only) or raise "
         "--memory-limit\n";
  return false;
}

}  // namespace

int run_command(const RunArgs& args, std::ostream& out, std::ostream& err, bool progress) {
  if (args.backend == "verbs" && !args.memory_limit.empty()) {
    err << kErrorPrefix << "--memory-limit applies to the simulator (--backend sim) only\n";
    return kExitBadInput;
  }
  if (args.backend == "verbs") return verbs_run_command(args, out, err);
  if (args.backend != "sim") {
    err << kErrorPrefix << "--backend must be 'sim' or 'verbs', not '" << args.backend << "'\n";
    return kExitBadInput;
  }
  if (std::string flag = verbs_only_flag_given(args.verbs); !flag.empty()) {
    err << kErrorPrefix << flag << " applies to --backend verbs only\n";
    return kExitBadInput;
  }
  const std::string path = args.scenario_path.empty() ? default_scenario_path()
                                                      : args.scenario_path;
  std::optional<std::vector<ScenarioOverride>> overrides = parse_override_flags(args.overrides, err);
  if (!overrides) return kExitBadInput;
  std::optional<Scenario> loaded = load_scenario_argument(path, err, *overrides);
  if (!loaded) return kExitBadInput;
  Scenario& scenario = *loaded;
  const bool payload = scenario.payload && !args.timing_only;
  std::ostringstream estimate;
  if (!bound_payload_memory(args, path, payload, scenario, estimate, err)) return kExitBadInput;
  std::optional<RunOutputs> outputs = open_run_outputs(args, path, err);
  if (!outputs) return kExitBadInput;
  SimulationOptions options;
  options.timing_only = args.timing_only;
  options.has_seed = args.has_seed;
  options.seed = args.seed;
  const uint64_t seed = args.has_seed ? args.seed : scenario.seed;
  // The seed goes out before the run starts, so a run that never ends can
  // still be replayed.
  out << "tensorwire run " << path << " --seed " << seed << (payload ? "" : " --timing-only")
      << override_flags_text(*overrides) << "\n"
      << estimate.str() << std::flush;

  report::ChromeTraceWriter chrome_trace;
  NullTraceSink null_trace;
  TraceSink& trace = outputs->trace_file ? static_cast<TraceSink&>(chrome_trace) : null_trace;
  chrome_trace.set_metadata("tool", "tensorwire");
  chrome_trace.set_metadata("scenario", scenario.name);
  chrome_trace.set_metadata("scenario_path", path);
  chrome_trace.set_metadata("seed", std::to_string(seed));
  chrome_trace.set_metadata("mode", payload ? "payload" : "timing");

  RunReport result;
  {
    report::ProgressBar bar(err, progress, 0, progress_unit_of(scenario));
    result = run_simulation(scenario, options, trace,
                            [&bar](size_t done, size_t total) { bar.update(done, total); });
    bar.finish();
  }
  out << "\n" << report::summary_text(result);
  if (!result.coverage.empty()) out << "\n" << report::coverage_summary_text(result.coverage);

  return write_run_outputs(args, *outputs, result, chrome_trace, out, err);
}

CLI::App* add_plan_command(CLI::App& app, PlanArgs& args) {
  CLI::App* plan = app.add_subcommand(
      "plan", "Plan a collective scenario (a broadcast), simulate it (timing only) and write its transfer graph");
  plan->add_option("SCENARIO", args.scenario_path, "Scenario file (TOML) run by a collective protocol")
      ->required()
      ->type_name("");
  plan->add_option("--dot", args.dot_path,
                   "Write the transfer graph as Graphviz DOT (edges: bytes and when each copy "
                   "first became busy)")
      ->type_name("FILE")
      ->check(non_empty_value());
  add_override_option(*plan, args.overrides);
  return plan;
}

int plan_command(const PlanArgs& args, std::ostream& out, std::ostream& err) {
  std::optional<std::vector<ScenarioOverride>> overrides = parse_override_flags(args.overrides, err);
  if (!overrides) return kExitBadInput;
  std::optional<Scenario> loaded = load_scenario_argument(args.scenario_path, err, *overrides);
  if (!loaded) return kExitBadInput;
  const Scenario& scenario = *loaded;
  if (scenario.protocol.descriptor().shape() != ProtocolShape::kCollective) {
    err << kErrorPrefix << "'" << args.scenario_path << "' runs the point-to-point protocol '"
        << scenario.protocol.name
        << "'; plan draws the transfer graphs of collective protocols ([workload] kind = "
           "\"broadcast\")\n";
    return kExitBadInput;
  }
  std::optional<OutputFile> dot_file;
  if (!args.dot_path.empty()) {
    if (Status st = refuse_overwriting_input(args.dot_path, "--dot", args.scenario_path,
                                             "scenario file");
        !st.is_ok()) {
      err << kErrorPrefix << st.message() << "\n";
      return kExitBadInput;
    }
    Result<OutputFile> opened = OutputFile::open(args.dot_path, "--dot");
    if (!opened.is_ok()) {
      err << kErrorPrefix << opened.status().message() << "\n";
      return kExitBadInput;
    }
    dot_file.emplace(std::move(opened).value());
  }
  out << "tensorwire plan " << args.scenario_path << override_flags_text(*overrides)
      << " (simulated timing only, seed " << scenario.seed << ")\n\n";
  SimulationOptions options;
  options.timing_only = true;
  NullTraceSink trace;
  const RunReport result = run_simulation(scenario, options, trace);
  out << report::summary_text(result);
  if (result.collective == nullptr) {
    err << kErrorPrefix << args.scenario_path << ": cannot plan the "
        << scenario.workload.kind << ": " << problem_lines(result.problems) << "\n";
    return kExitBadInput;
  }
  int code = result.passed() ? kExitOk : kExitCheckFailed;
  if (dot_file) {
    Status st = dot_file->write_and_close(result.collective->graph_dot(scenario.name));
    if (!st.is_ok()) {
      err << kErrorPrefix << st.message() << "\n";
      return kExitBadInput;
    }
    out << "transfer graph: " << args.dot_path << " (Graphviz DOT: dot -Tsvg " << args.dot_path
        << ")\n";
  }
  return code;
}

}  // namespace tensorwire::app
