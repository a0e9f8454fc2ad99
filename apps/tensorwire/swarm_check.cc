#include "apps/tensorwire/swarm_check.h"

#include <optional>
#include <string>

#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/output_file.h"
#include "apps/tensorwire/scenario_argument.h"
#include "core/protocols/protocol_registry.h"
#include "core/protocols/swarm_draw.h"
#include "core/splitmix64.h"
#include "model/explorer.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::app {
namespace {

// Smaller scenarios tried at most when shrinking a failing one: each is a
// search of up to --max-schedules executions when it does not fail.
constexpr uint32_t kMaxShrinkTries = 200;

std::string scenario_file_of(const CheckArgs& args) { return args.out_prefix + ".scenario.toml"; }

// --replay replays one schedule on one scenario file; a swarm has none yet.
// And PREFIX.scenario.toml must not overwrite SCENARIO.
bool swarm_flags_fit(const CheckArgs& args, std::ostream& err) {
  if (!args.replay_path.empty()) {
    err << kErrorPrefix << "--replay replays one scenario file's schedule; it does not go with "
        << "--swarm (replay the swarm's counterexample: tensorwire check " << scenario_file_of(args)
        << " --replay " << args.out_prefix << ".schedule)\n";
    return false;
  }
  const std::string path = scenario_file_of(args);
  if (Status st = refuse_overwriting_input(path, "--out file '" + path + "'", args.scenario_path,
                                           "scenario file");
      !st.is_ok()) {
    err << kErrorPrefix << st.message() << "\n";
    return false;
  }
  return true;
}

void print_command(const CheckArgs& args, uint64_t seed, std::ostream& out) {
  out << "tensorwire check " << args.scenario_path << " --swarm " << args.swarm << " --strategy "
      << args.strategy << " --seed " << seed << " --max-schedules " << args.max_schedules
      << (args.plant_bug != "none" ? " --plant-bug " + args.plant_bug : std::string())
      << (args.faults != "none" ? " --faults " + args.faults : std::string())
      << (args.exact ? " --exact" : "") << "\n"
      << std::flush;
}

// `text` as a scenario of `protocol` with the bug planted; nothing, and why
// in `problem`, when it is not one.
std::optional<Scenario> load_drawn(const std::string& text, const CheckArgs& args,
                                   const ProtocolDescriptor& protocol, std::string& problem) {
  std::optional<Scenario> scenario;
  try {
    scenario = load_scenario_string(text, scenario_file_of(args));
  } catch (const ScenarioError& e) {
    problem = e.what();
    return std::nullopt;
  }
  if (scenario->protocol.name != protocol.name()) {
    problem = "it runs protocol \"" + scenario->protocol.name + "\", not \"" +
              std::string(protocol.name()) + "\"";
  } else if (!protocol.plant_bug(scenario->protocol.options, args.plant_bug)) {
    problem = "--plant-bug " + args.plant_bug + " is not a bug of its protocol";
  }
  if (!problem.empty()) scenario.reset();
  return scenario;
}

// The search the flags ask for, on a drawn scenario with its own seed
// (--seed seeded the swarm).
model::CheckReport check_drawn(const CheckArgs& args, const Scenario& scenario) {
  model::CheckOptions options = check_options_of(args, scenario);
  options.seed = scenario.seed;
  return model::check(scenario, options);
}

// A drawn scenario the harness rejects is the generator's fault, not the
// protocol's: written out to look at, and an internal error.
int refuse_drawn_scenario(const CheckArgs& args, const std::string& text, const std::string& why,
                          std::ostream& err) {
  const std::string path = scenario_file_of(args);
  const Status st = write_file_atomically(path, text, "--out");
  err << kErrorPrefix << "the protocol drew a scenario that cannot be checked (a bug in its "
      << "swarm generator, not in the protocol): " << why << "\n  "
      << (st.is_ok() ? "the scenario is in " + path : st.message()) << "\n";
  return kExitInternalError;
}

// What the swarm has done so far.
struct SwarmTally {
  uint64_t scenarios = 0;
  uint64_t schedules = 0;
  uint64_t not_exhausted = 0;  // dfs: scenarios stopped at --max-schedules
};

// The violation's scenario as a file, checked again from it: `check`
// writes the counterexample beside it, naming it.
int write_violation(const CheckArgs& args, const std::string& text, std::ostream& out,
                    std::ostream& err) {
  const std::string path = scenario_file_of(args);
  if (Status st = write_file_atomically(path, text, "--out"); !st.is_ok()) {
    err << kErrorPrefix << st.message() << "; the scenario follows on stdout\n";
    out << text;
    return kExitBadInput;
  }
  out << "scenario: " << path << "; checking it again from the file to write its counterexample\n"
      << std::flush;
  CheckArgs again = args;
  again.scenario_path = path;
  again.swarm = 0;
  again.has_seed = false;  // the drawn scenario's own seed, as the swarm checked it
  const int code = check_command(again, out, err, false);
  if (code == kExitOk || code == kExitSearchIncomplete) {
    err << kErrorPrefix << "the violation did not reproduce from " << path
        << ": the check is not deterministic (a harness bug)\n";
    return kExitInternalError;
  }
  return code;
}

void print_summary(const CheckArgs& args, const SwarmTally& tally, std::ostream& out) {
  out << "swarm: " << tally.scenarios << " scenarios checked, " << tally.schedules
      << " schedules, no violation";
  if (args.strategy == "dfs") {
    out << "; " << tally.scenarios - tally.not_exhausted << " of " << tally.scenarios
        << " explored exhaustively";
  }
  out << "\n";
}

// The failing draw shrunk (shrink_swarm_scenario) to the smallest scenario
// that fails with the same outcome, written and checked again as a file.
int shrink_and_write(const CheckArgs& args, const ProtocolDescriptor& protocol,
                     const SwarmDrawKey& key, model::CheckOutcome outcome, std::ostream& out,
                     std::ostream& err) {
  const auto fails_alike = [&](const std::string& text) {
    std::string problem;
    const std::optional<Scenario> s = load_drawn(text, args, protocol, problem);
    return s && check_drawn(args, *s).outcome == outcome;
  };
  const ShrunkSwarmScenario shrunk =
      shrink_swarm_scenario(protocol, key.seed, key.size, fails_alike, kMaxShrinkTries);
  std::string text = shrunk.text;
  if (shrunk.steps > 0) {
    text.insert(text.find('\n') + 1, "# Then shrunk in " + std::to_string(shrunk.steps) +
                                        " steps to the smallest draw found that fails alike.\n");
  }
  out << "shrunk in " << shrunk.steps << " steps (" << shrunk.tries
      << " smaller scenarios checked)\n";
  return write_violation(args, text, out, err);
}

// Checks scenario `index`; an exit code when the swarm stops there.
std::optional<int> check_one(const CheckArgs& args, const ProtocolDescriptor& protocol,
                             uint64_t swarm_seed, uint64_t index, SwarmTally& tally,
                             std::ostream& out, std::ostream& err) {
  const SwarmDrawKey key = swarm_draw_key(swarm_seed, index);
  const std::string text = draw_swarm_scenario(protocol, key.seed, key.size);
  std::string problem;
  const std::optional<Scenario> scenario = load_drawn(text, args, protocol, problem);
  if (!scenario) return refuse_drawn_scenario(args, text, problem, err);
  const model::CheckReport report = check_drawn(args, *scenario);
  ++tally.scenarios;
  tally.schedules += report.schedules;
  if (args.strategy == "dfs" && !report.exhausted) ++tally.not_exhausted;
  out << "[" << index + 1 << "/" << args.swarm << "] " << scenario->name << " (size " << key.size
      << "): " << report.schedules << " schedules, " << model::check_outcome_name(report.outcome)
      << "\n"
      << std::flush;
  if (!report.counterexample) return std::nullopt;
  if (report.outcome == model::CheckOutcome::kBadInput) {
    const auto& problems = report.counterexample->problems;
    return refuse_drawn_scenario(
        args, text, problems.empty() ? "bad input" : problem_line(problems[0]), err);
  }
  out << "swarm: violation in scenario " << index + 1 << " of " << args.swarm << ", after "
      << tally.schedules << " schedules; shrinking it\n"
      << std::flush;
  return shrink_and_write(args, protocol, key, report.outcome, out, err);
}

}  // namespace

SwarmDrawKey swarm_draw_key(uint64_t swarm_seed, uint64_t index) {
  // The index-th value of the splitmix64 sequence from swarm_seed.
  uint64_t state = swarm_seed + index * 0x9e3779b97f4a7c15ull;
  SwarmDrawKey key;
  key.seed = splitmix64(state);
  key.size = static_cast<uint32_t>(kMaxSwarmSize / 10 * (index % 10 + 1));
  return key;
}

void add_swarm_option(CLI::App& check, CheckArgs& args) {
  check.add_option("--swarm", args.swarm,
                   "Check N small scenarios the protocol of SCENARIO draws (seeded by --seed; "
                   "--max-schedules each); the first violation's scenario is shrunk and written as "
                   "PREFIX.scenario.toml beside PREFIX.schedule")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32))
      ->type_name("N");
}

int swarm_check(const CheckArgs& args, std::ostream& out, std::ostream& err) {
  if (!swarm_flags_fit(args, err)) return kExitBadInput;
  std::optional<Scenario> given = load_scenario_argument(args.scenario_path, err);
  if (!given) return kExitBadInput;
  const ProtocolDescriptor& protocol = given->protocol.descriptor();
  if (!protocol.plant_bug(given->protocol.options, args.plant_bug)) {
    err << kErrorPrefix << "--plant-bug " << args.plant_bug << " is not a bug of protocol \""
        << protocol.name() << "\", which '" << args.scenario_path << "' runs\n";
    return kExitBadInput;
  }
  if (!faults_fit_protocol(args, *given, err)) return kExitBadInput;
  if (draw_swarm_scenario(protocol, 0, 0).empty()) {
    err << kErrorPrefix << "protocol \"" << protocol.name() << "\" draws no swarm scenarios\n";
    return kExitBadInput;
  }
  const uint64_t swarm_seed = args.has_seed ? args.seed : given->seed;
  print_command(args, swarm_seed, out);
  out << "swarm: " << args.swarm << " scenarios of protocol " << protocol.name() << "\n";
  SwarmTally tally;
  for (uint64_t i = 0; i < args.swarm; ++i) {
    if (std::optional<int> done = check_one(args, protocol, swarm_seed, i, tally, out, err)) {
      return *done;
    }
  }
  print_summary(args, tally, out);
  return tally.not_exhausted > 0 ? kExitSearchIncomplete : kExitOk;
}

}  // namespace tensorwire::app
