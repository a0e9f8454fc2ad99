#include "apps/tensorwire/check_command.h"

#include <chrono>
#include <charconv>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "apps/tensorwire/check_result_file.h"
#include "apps/tensorwire/check_shard.h"
#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/memory_limit.h"
#include "apps/tensorwire/option_checks.h"
#include "apps/tensorwire/output_file.h"
#include "apps/tensorwire/run_command.h"
#include "apps/tensorwire/scenario_argument.h"
#include "apps/tensorwire/swarm_check.h"
#include "core/protocols/protocol_registry.h"
#include "model/counterexample_shrinker.h"
#include "model/explorer.h"
#include "model/schedule_file.h"
#include "model/schedule_replay.h"
#include "report/check_summary.h"
#include "report/chrome_trace_writer.h"
#include "report/content_hash.h"
#include "report/progress_bar.h"
#include "report/text_trace_sink.h"
#include "core/assert.h"
#include "core/units_format.h"
#include "scenario/scenario_loader.h"
#include "scenario/text_file.h"

namespace tensorwire::app {
namespace {

int exit_code_of(model::CheckOutcome outcome) {
  switch (outcome) {
    case model::CheckOutcome::kNothingFound: return kExitOk;
    case model::CheckOutcome::kSafety: return kExitCheckFailed;
    case model::CheckOutcome::kLiveness: return kExitLivenessViolation;
    case model::CheckOutcome::kBadInput: return kExitBadInput;
  }
  return kExitInternalError;
}

// Where the counterexample goes: --out, with "-replay" added when its
// .schedule would overwrite the schedule being replayed.
std::string counterexample_prefix(const CheckArgs& args) {
  if (!args.replay_path.empty() && same_file_path(args.out_prefix + ".schedule", args.replay_path)) {
    return args.out_prefix + "-replay";
  }
  return args.out_prefix;
}

// An error when a counterexample file would overwrite an input (the scenario,
// or the schedule replayed); empty when none would. Asked before the search,
// so that a long search does not end in a refusal.
std::string counterexample_paths_problem(const CheckArgs& args) {
  const std::string prefix = counterexample_prefix(args);
  for (const char* suffix : {".schedule", ".original.schedule", ".steps.txt", ".trace.json"}) {
    // A replay is not shrunk: it writes no .original.schedule (so one may be replayed).
    if (!args.replay_path.empty() && std::string_view(suffix) == ".original.schedule") continue;
    const std::string path = prefix + suffix;
    for (auto [input, what] : {std::pair{&args.scenario_path, "scenario file"},
                               std::pair{&args.replay_path, "--replay schedule"}}) {
      if (Status st = refuse_overwriting_input(path, "--out file '" + path + "'", *input, what);
          !st.is_ok()) {
        return st.message();
      }
    }
  }
  return "";
}

// Plants the bug `name` names ("none" plants nothing) in the scenario's
// protocol; false when it is another protocol's bug.
bool plant_bug(const std::string& name, Scenario& scenario) {
  return scenario.protocol.descriptor().plant_bug(scenario.protocol.options, name);
}

// The protocol whose bug zoo holds `bug`; nullptr when none does.
const ProtocolDescriptor* protocol_with_bug(std::string_view bug) {
  for (const ProtocolDescriptor* p : registered_protocols()) {
    for (std::string_view b : p->planted_bugs()) {
      if (b == bug) return p;
    }
  }
  return nullptr;
}

// --plant-bug: every registered protocol's bug zoo, named in the help.
void add_plant_bug_option(CLI::App& check, CheckArgs& args) {
  std::vector<std::string> bugs{"none"};
  std::string owners;
  for (const ProtocolDescriptor* p : registered_protocols()) {
    std::string names;
    for (std::string_view b : p->planted_bugs()) {
      bugs.emplace_back(b);
      names += (names.empty() ? "" : ", ") + std::string(b);
    }
    if (!names.empty()) owners += "; " + std::string(p->name()) + ": " + names;
  }
  check.add_option("--plant-bug", args.plant_bug,
                   "Plant one of the bug zoo's bugs in the protocol, to watch the checker find it (" +
                       (owners.empty() ? std::string("none") : owners.substr(2)) + ")")
      ->check(CLI::IsMember(bugs))
      ->type_name("NAME");
}

}  // namespace

CLI::App* add_check_command(CLI::App& app, CheckArgs& args) {
  CLI::App* check = app.add_subcommand(
      "check", "Explore the orders of a scenario's same-time events and report any that breaks a check");
  check->add_option("SCENARIO", args.scenario_path, "Scenario file (TOML)")->required()->type_name("");
  check->add_option("--strategy", args.strategy,
                    "dfs (every order, first to last), random (seeded random walks) or pct "
                    "(probabilistic concurrency testing)")
      ->check(CLI::IsMember({"dfs", "random", "pct"}))
      ->type_name("NAME");
  check->add_flag("--exact", args.exact,
                  "dfs only: cut at a state seen before only where no order can be lost (slower; "
                  "without it the state cache is an abstraction)");
  check->add_option("--max-schedules", args.max_schedules, "Executions to run at most (default 1000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->type_name("N");
  add_seed_option(*check, args.seed, args.has_seed,
                  "Seed of the scenario's content and of the strategies (default: the scenario's)");
  check->add_option_function<uint32_t>(
           "--pct-depth",
           [&args](const uint32_t& depth) {
             args.pct_depth = depth;
             args.has_pct_depth = true;
           },
           "pct: PCT's bug depth d (default 3)")
      ->check(CLI::Range(1u, 64u))
      ->type_name("D");
  check->add_option("--replay", args.replay_path,
                    "Re-run the one execution a schedule file (written by an earlier check) describes")
      ->type_name("FILE")
      ->check(non_empty_value());
  check->add_option("--out", args.out_prefix,
                    "On a violation, write PREFIX.schedule, PREFIX.steps.txt and PREFIX.trace.json "
                    "of the shrunk counterexample, and PREFIX.original.schedule of the one found "
                    "(default: tensorwire-check)")
      ->type_name("PREFIX")
      ->check(non_empty_value());
  check->add_flag("--no-shrink", args.no_shrink,
                  "Write the counterexample as found, without searching for a shorter schedule "
                  "that breaks the same check");
  check->add_option("--faults", args.faults,
                    "Faults to explore (up to --max-faults per execution): none, or a "
                    "comma-separated list of qp_error (the queue pair between ranks 0 and 1 "
                    "fails), reg_fail (the next memory registration of a rank fails), crash (a "
                    "rank dies), timeout (the earliest pending timeout, such as the protocol's "
                    "request_timeout, fires now) and abort (the application aborts its current "
                    "step on a rank); dfs tries each at every point where it can strike, and "
                    "places a lone qp_error by its races with the events on that queue pair. A "
                    "Recv the protocol fails because of a fault is its right answer, not a violation")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::vector<model::FaultKind> kinds;
            return model::parse_fault_list(text, kinds)
                       ? std::string()
                       : "'" + text + "' is not a fault list (none, or qp_error, reg_fail, "
                                      "crash, timeout, abort separated by commas, each at most once)";
          },
          "", "FAULTS"))
      ->type_name("LIST");
  check->add_option("--max-faults", args.max_faults,
                    "With --faults: how many faults may strike in one execution (default 1)")
      ->check(CLI::Range(1u, model::kMaxFaultsPerExecution))
      ->type_name("K");
  add_plant_bug_option(*check, args);
  add_memory_limit_option(*check, args.memory_limit);
  add_swarm_option(*check, args);
  add_scale_options(*check, args);
  return check;
}

model::CheckOptions check_options_of(const CheckArgs& args, const Scenario& scenario) {
  model::CheckOptions options;
  options.seed = args.has_seed ? args.seed : scenario.seed;
  options.max_schedules = args.max_schedules;
  options.pct_depth = args.pct_depth;
  options.exact = args.exact;
  model::parse_fault_list(args.faults, options.faults);  // checked by the flag's validator
  options.max_faults = args.max_faults;
  options.jobs = jobs_of(args);
  options.shard_index = args.shard_index;
  options.shard_count = std::max<uint32_t>(args.shard_count, 1);
  options.keep_states = !args.result_path.empty() || args.shard_count > 0;
  options.strategy = args.strategy == "dfs"   ? model::CheckStrategy::kDfs
                     : args.strategy == "pct" ? model::CheckStrategy::kPct
                                              : model::CheckStrategy::kRandom;
  return options;
}

// A step abort is the application's, and only point-to-point workloads have
// steps an application aborts.
bool faults_fit_protocol(const CheckArgs& args, const Scenario& scenario, std::ostream& err) {
  std::vector<model::FaultKind> kinds;
  model::parse_fault_list(args.faults, kinds);  // checked by the flag's validator
  const bool abort = std::find(kinds.begin(), kinds.end(), model::FaultKind::kStepAbort) != kinds.end();
  if (abort && scenario.protocol.descriptor().shape() == ProtocolShape::kCollective) {
    err << kErrorPrefix << "--faults abort: '" << args.scenario_path << "' runs the collective \""
        << scenario.protocol.name << "\", which has no steps an application aborts\n";
    return false;
  }
  return true;
}

namespace {

// The scenario as the checker runs it: its name and a hash of its file's
// bytes, recorded in a schedule file and compared on --replay.
model::ScenarioIdentity scenario_identity(const std::string& path, const Scenario& scenario) {
  Result<std::string> text = read_text_file(path);
  return {scenario.name, text ? report::fnv1a_64(*text) : 0};
}

// What a check found, and how its schedule file names the strategy.
struct Finding {
  std::optional<model::Execution> failing;   // shrunk, unless --no-shrink or --replay
  std::optional<model::Execution> original;  // as found, when `failing` is its shrunk form
  std::string strategy_name;
};

// Replays --replay's schedule. An exit code when there is nothing more to do
// (bad input, or the replay found nothing); otherwise the failing execution.
std::optional<int> replay_schedule(const CheckArgs& args, Scenario& scenario,
                                   const model::ScenarioIdentity& identity,
                                   model::CheckOptions& options, Finding& finding,
                                   std::ostream& out, std::ostream& err) {
  Result<model::ScheduleReplay> replay = model::replay_schedule_file(
      args.replay_path, scenario, identity, args.has_seed ? std::optional<uint64_t>(args.seed) : std::nullopt,
      args.plant_bug != "none");
  if (!replay) {
    err << kErrorPrefix << replay.status().message() << "\n";
    return kExitBadInput;
  }
  model::Execution& e = replay->execution;
  out << "tensorwire check " << args.scenario_path << " --replay " << args.replay_path
      << " (seed " << replay->seed << ", " << replay->schedule.choices.size() << " choices)\n";
  out << "replayed: " << model::check_outcome_name(e.outcome) << "\n";
  for (const Problem& p : e.problems) out << "  " << problem_line(p) << "\n";
  options.seed = replay->seed;
  options.faults = replay->schedule.faults;
  options.max_faults = replay->schedule.max_faults;
  finding.strategy_name = "replay of " + replay->schedule.strategy;
  if (e.diverged) {
    err << kErrorPrefix << "the schedule in " << args.replay_path
        << " does not fit this execution: it is not the execution the file recorded\n";
    return kExitBadInput;
  }
  if (e.outcome == model::CheckOutcome::kNothingFound) return kExitOk;
  finding.failing = std::move(e);
  return std::nullopt;
}

// The search's first line: what shards of one search share.
std::string search_line(const CheckArgs& args, const model::CheckOptions& options) {
  std::ostringstream out;
  out << "tensorwire check " << args.scenario_path << " --strategy " << args.strategy
      << " --seed " << options.seed << " --max-schedules " << options.max_schedules
      << (args.plant_bug != "none" ? " --plant-bug " + args.plant_bug : std::string())
      << (args.faults != "none" ? " --faults " + args.faults : std::string())
      << (args.max_faults != 1 ? " --max-faults " + std::to_string(args.max_faults) : std::string())
      << (args.exact ? " --exact" : "");
  return out.str();
}

// --result (and every shard's result file): see check_result_file.h.
void write_result_file(const CheckArgs& args, const Scenario& scenario, const std::string& line,
                       const model::CheckReport& report, double seconds, std::ostream& err) {
  CheckResultFile r;
  r.search = line;
  r.scenario_path = args.scenario_path;
  const model::ScenarioIdentity identity = scenario_identity(args.scenario_path, scenario);
  r.scenario_name = identity.name;
  r.scenario_hash = identity.hash;
  r.protocol = scenario.protocol.name;
  r.strategy = args.strategy;
  r.exact = args.exact;
  r.shard_index = args.shard_index;
  r.shard_count = std::max<uint32_t>(args.shard_count, 1);
  r.seconds = seconds;
  r.report.outcome = report.outcome;
  r.report.schedules = report.schedules;
  r.report.choice_points = report.choice_points;
  r.report.events = report.events;
  r.report.distinct_states = report.distinct_states;
  r.report.cached_schedules = report.cached_schedules;
  r.report.exhausted = report.exhausted;
  r.report.states = report.states;
  r.report.transitions = report.transitions;
  r.report.coverage = report.coverage;
  if (report.counterexample && report.outcome != model::CheckOutcome::kBadInput) {
    r.counterexample_schedule = counterexample_prefix(args) + ".schedule";
    for (const Problem& p : report.counterexample->problems) r.counterexample_problems.push_back(problem_line(p));
  }
  if (Status st = write_file_atomically(args.result_path, check_result_json(r), "--result"); !st.is_ok()) {
    err << kErrorPrefix << st.message() << "\n";
  }
}

// Searches with the strategy. An exit code when nothing was found; otherwise
// the counterexample (and in `options.faults` the faults its schedule offers).
std::optional<int> search(const CheckArgs& args, const Scenario& scenario,
                          model::CheckOptions& options, bool progress, Finding& finding,
                          std::ostream& out, std::ostream& err) {
  const std::string line = search_line(args, options);
  out << line << "\n";
  if (args.shard_count > 0) out << "shard " << args.shard_index << " of " << args.shard_count << "\n";
  out << std::flush;
  const auto started = std::chrono::steady_clock::now();
  model::CheckReport report;
  {
    report::ProgressBar bar(err, progress, 0, "schedules");
    report = model::check(scenario, options,
                          [&bar](uint64_t done, uint64_t total) { bar.update(done, total); });
    bar.finish();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const bool dfs = options.strategy == model::CheckStrategy::kDfs;
  out << report::check_summary_text(report, dfs, args.exact, scenario.protocol.name, seconds);
  if (!args.result_path.empty()) write_result_file(args, scenario, line, report, seconds, err);
  if (!report.counterexample) return dfs && !report.exhausted ? kExitSearchIncomplete : kExitOk;
  finding.failing = std::move(report.counterexample);
  // Random walks and pct run their first execution without faults: its
  // schedule replays without them.
  options.faults = report.counterexample_faults;
  if (finding.failing->outcome == model::CheckOutcome::kBadInput) return std::nullopt;
  out << "failing schedule: " << report.schedules << " of this run\n";
  for (const Problem& p : finding.failing->problems) out << "  " << problem_line(p) << "\n";
  return std::nullopt;
}

// A run that hit a limit of the harness (or could not be set up) says
// nothing about the protocol: no counterexample, an input error naming why.
int refuse_unchecked_scenario(const CheckArgs& args, const model::Execution& run,
                              std::ostream& err) {
  TW_ASSERT(run.outcome == model::CheckOutcome::kBadInput);
  err << kErrorPrefix << "'" << args.scenario_path
      << "' cannot be checked as it is (not a protocol bug; no counterexample written):\n";
  for (const Problem& p : run.problems) {
    if (p.kind == ProblemKind::kBadInput) err << "  " << problem_line(p) << "\n";
  }
  err << "  (the checker runs in payload mode, moving and checking real bytes: check a "
         "smaller scenario, such as scenarios/model_*.toml)\n";
  return kExitBadInput;
}

// The checker runs every execution in payload mode, whatever the scenario's
// [run] mode: each is bounded by --memory-limit, and a scenario estimated
// above it is refused before anything is allocated (false, after an error).
bool bound_payload_memory(const CheckArgs& args, Scenario& scenario, std::ostream& out,
                          std::ostream& err) {
  const std::optional<std::string> over = payload_memory_over_limit(args.memory_limit, scenario, out);
  if (!over) return true;
  err << kErrorPrefix << "'" << args.scenario_path
      << "' cannot be checked as it is (not a protocol bug; no counterexample written):\n  "
      << *over << "\n  (the checker runs in payload mode, moving and checking real bytes whatever the "
         "scenario's [run] mode: check a smaller scenario, such as scenarios/model_*.toml, or "
         "raise --memory-limit)\n";
  return false;
}

// Shrinks the counterexample a search found (model/counterexample_shrinker.h)
// and says by how much; the one found is kept as `finding.original`.
void shrink_finding(const Scenario& scenario, const model::CheckOptions& options,
                    Finding& finding, std::ostream& out) {
  model::ShrinkResult r = model::shrink_counterexample(
      model::model_scenario(scenario), options.seed, model::FaultOffer{options.faults, options.max_faults, {}}, *finding.failing);
  const model::ScheduleSize& n = r.size;
  const model::ScheduleSize& o = r.original_size;
  out << "shrunk: " << n.choice_points << " choice points, " << n.events << " events, "
      << n.deviations << " deviations (from " << o.choice_points << ", " << o.events << ", "
      << o.deviations << ") in " << r.replays << " replays\n";
  if (!r.reproduced) out << "  (the replay of the schedule found broke another check: kept as found)\n";
  if (r.execution.problems != finding.failing->problems) {
    for (const Problem& p : r.execution.problems) out << "  " << problem_line(p) << "\n";
  }
  finding.original = std::move(finding.failing);
  finding.failing = std::move(r.execution);
}

// The schedule file of `execution`.
model::ScheduleFile schedule_file_of(const CheckArgs& args, const Scenario& scenario,
                                     const model::ScenarioIdentity& identity,
                                     const model::CheckOptions& options,
                                     const std::string& strategy,
                                     const model::Execution& execution) {
  model::ScheduleFile file;
  file.scenario = args.scenario_path;
  file.scenario_name = identity.name;
  file.scenario_hash = identity.hash;
  file.seed = options.seed;
  file.strategy = strategy;
  file.outcome = model::check_outcome_name(execution.outcome);
  file.faults = options.faults;
  file.max_faults = options.max_faults;
  file.planted_bug = scenario.protocol.descriptor().planted_bug(scenario.protocol.options);
  file.choices = execution.choices;
  return file;
}

// Writes the counterexample: the schedule, and a trace of re-running it;
// beside it the schedule as found, when it was shrunk.
int write_counterexample(const CheckArgs& args, const Scenario& scenario,
                         const model::ScenarioIdentity& identity,
                         const model::CheckOptions& options, const Finding& finding,
                         std::ostream& out, std::ostream& err) {
  const model::Execution& failing = *finding.failing;
  const model::ScheduleFile file = schedule_file_of(
      args, scenario, identity, options,
      finding.original ? finding.strategy_name + ", shrunk" : finding.strategy_name, failing);
  std::vector<std::pair<std::string, std::string>> files;
  if (finding.original) {
    files.emplace_back(".original.schedule",
                       model::schedule_file_text(schedule_file_of(
                           args, scenario, identity, options, finding.strategy_name, *finding.original)));
  }
  report::ChromeTraceWriter chrome;
  report::TextTraceSink text;
  report::TeeTraceSink both(chrome, text);
  model::ReplayStrategy replay(failing.choices);
  model::run_execution(model::model_scenario(scenario), options.seed, replay, both, nullptr,
                       model::FaultOffer{options.faults, options.max_faults, {}});
  // Never overwrite the schedule being replayed.
  const std::string prefix = counterexample_prefix(args);
  files.emplace_back(".schedule", model::schedule_file_text(file));
  files.emplace_back(".steps.txt", text.text());
  files.emplace_back(".trace.json", chrome.to_json());
  for (const auto& [suffix, content] : files) {
    if (Status st = write_file_atomically(prefix + suffix, content, "--out"); !st.is_ok()) {
      // The violation stands; keep the schedule where the user can see it.
      err << kErrorPrefix << st.message() << "; the schedule follows on stdout\n";
      out << model::schedule_file_text(file);
      return exit_code_of(failing.outcome);
    }
  }
  out << "counterexample: " << prefix << ".schedule (replay: tensorwire check "
      << args.scenario_path << " --replay " << prefix << ".schedule), " << prefix
      << ".steps.txt, " << prefix << ".trace.json"
      << (finding.original ? ", " + prefix + ".original.schedule (as found)" : std::string())
      << "\n";
  return exit_code_of(failing.outcome);
}

// --exact and --pct-depth with a strategy they do not steer: an error,
// rather than a search that silently ignores them.
bool flags_fit_strategy(const CheckArgs& args, std::ostream& err) {
  if (args.exact && args.strategy != "dfs") {
    err << kErrorPrefix << "--exact applies to --strategy dfs only, not " << args.strategy << "\n";
    return false;
  }
  if (args.has_pct_depth && args.strategy != "pct") {
    err << kErrorPrefix << "--pct-depth applies to --strategy pct only, not " << args.strategy
        << "\n";
    return false;
  }
  if (args.max_faults != 1 && args.faults == "none") {
    err << kErrorPrefix << "--max-faults applies with --faults only\n";
    return false;
  }
  return true;
}

}  // namespace

int check_command(const CheckArgs& given, std::ostream& out, std::ostream& err, bool progress) {
  const CheckArgs args = sharded_args(given);
  if (!flags_fit_strategy(args, err)) return kExitBadInput;
  if (args.swarm > 0) return swarm_check(args, out, err);
  std::optional<Scenario> loaded = load_scenario_argument(args.scenario_path, err);
  if (!loaded) return kExitBadInput;
  Scenario& scenario = *loaded;
  if (std::string e = counterexample_paths_problem(args); !e.empty()) {
    err << kErrorPrefix << e << "\n";
    return kExitBadInput;
  }
  if (!plant_bug(args.plant_bug, scenario)) {
    const ProtocolDescriptor* owner = protocol_with_bug(args.plant_bug);
    err << kErrorPrefix << "--plant-bug " << args.plant_bug << " is a bug of protocol \""
        << (owner != nullptr ? owner->name() : "?") << "\", and '" << args.scenario_path
        << "' runs \"" << scenario.protocol.name << "\"\n";
    return kExitBadInput;
  }
  if (!faults_fit_protocol(args, scenario, err)) return kExitBadInput;
  if (!bound_payload_memory(args, scenario, out, err)) return kExitBadInput;
  model::CheckOptions options = check_options_of(args, scenario);
  const model::ScenarioIdentity identity = scenario_identity(args.scenario_path, scenario);
  Finding finding;
  finding.strategy_name = args.strategy;
  const std::optional<int> done =
      args.replay_path.empty()
          ? search(args, scenario, options, progress, finding, out, err)
          : replay_schedule(args, scenario, identity, options, finding, out, err);
  if (done) return *done;
  if (finding.failing->outcome == model::CheckOutcome::kBadInput) {
    return refuse_unchecked_scenario(args, *finding.failing, err);
  }
  if (args.replay_path.empty() && !args.no_shrink) shrink_finding(scenario, options, finding, out);
  return write_counterexample(args, scenario, identity, options, finding, out, err);
}

}  // namespace tensorwire::app
