#include "apps/tensorwire/check_merge_command.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "apps/tensorwire/check_result_file.h"
#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/scenario_argument.h"
#include "core/units_format.h"
#include "report/check_summary.h"

namespace tensorwire::app {
namespace {

int exit_code_of(const model::CheckReport& report, bool dfs) {
  switch (report.outcome) {
    case model::CheckOutcome::kNothingFound:
      return dfs && !report.exhausted ? kExitSearchIncomplete : kExitOk;
    case model::CheckOutcome::kSafety: return kExitCheckFailed;
    case model::CheckOutcome::kLiveness: return kExitLivenessViolation;
    case model::CheckOutcome::kBadInput: return kExitBadInput;
  }
  return kExitInternalError;
}

// An error naming the file when the shards are not the N shards of one
// search, each once; empty when they are. Sorts them by shard.
std::string shards_problem(std::vector<CheckResultFile>& shards, const std::vector<std::string>& files) {
  const CheckResultFile& first = shards.front();
  for (size_t i = 1; i < shards.size(); ++i) {
    const CheckResultFile& s = shards[i];
    if (s.search != first.search || s.scenario_hash != first.scenario_hash) {
      return "'" + files[i] + "' is a shard of another search than '" + files[0] + "' (\"" + s.search +
             "\" on scenario bytes " + std::to_string(s.scenario_hash) + ", not \"" + first.search + "\")";
    }
    if (s.shard_count != first.shard_count) {
      return "'" + files[i] + "' is shard " + std::to_string(s.shard_index) + " of " +
             std::to_string(s.shard_count) + ", '" + files[0] + "' one of " + std::to_string(first.shard_count);
    }
  }
  std::vector<size_t> order(shards.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&shards](size_t a, size_t b) { return shards[a].shard_index < shards[b].shard_index; });
  std::string missing;
  uint32_t expected = 0;
  for (size_t i : order) {
    if (shards[i].shard_index < expected) {
      return "shard " + std::to_string(shards[i].shard_index) + " is given twice ('" + files[i] + "')";
    }
    for (; expected < shards[i].shard_index; ++expected) missing += " " + std::to_string(expected);
    expected = shards[i].shard_index + 1;
  }
  for (; expected < first.shard_count; ++expected) missing += " " + std::to_string(expected);
  if (!missing.empty()) {
    return "shards missing of the " + std::to_string(first.shard_count) + ":" + missing;
  }
  std::vector<CheckResultFile> sorted;
  for (size_t i : order) sorted.push_back(std::move(shards[i]));
  shards = std::move(sorted);
  return "";
}

// The shards (sorted) as one report; the first violation by shard.
model::CheckReport merged(const std::vector<CheckResultFile>& shards, std::optional<size_t>& failing) {
  model::CheckReport m;
  m.exhausted = true;
  std::unordered_set<uint64_t> states;
  uint64_t states_unlisted = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const model::CheckReport& r = shards[i].report;
    m.schedules += r.schedules;
    m.choice_points += r.choice_points;
    m.events += r.events;
    m.cached_schedules += r.cached_schedules;
    m.exhausted = m.exhausted && r.exhausted;
    states.insert(r.states.begin(), r.states.end());
    if (r.states.empty()) states_unlisted += r.distinct_states;
    add_transition_tables(m.transitions, r.transitions);
    m.coverage.add(r.coverage);
    if (!failing && r.outcome != model::CheckOutcome::kNothingFound) {
      failing = i;
      m.outcome = r.outcome;
    }
  }
  m.distinct_states = states.size() + states_unlisted;
  return m;
}

}  // namespace

CLI::App* add_check_merge_command(CLI::App& app, CheckMergeArgs& args) {
  CLI::App* merge = app.add_subcommand(
      "check-merge", "Combine the result files of a sharded check (check --shard I/N) into one verdict");
  merge->add_option("FILES", args.files, "The shards' result files (PREFIX.shard-I-of-N.json)")
      ->required()
      ->type_name("");
  return merge;
}

int check_merge_command(const CheckMergeArgs& args, std::ostream& out, std::ostream& err) {
  std::vector<CheckResultFile> shards;
  for (const std::string& file : args.files) {
    Result<CheckResultFile> r = read_check_result(file);
    if (!r) {
      err << kErrorPrefix << r.status().message() << "\n";
      return kExitBadInput;
    }
    shards.push_back(std::move(*r));
  }
  if (std::string problem = shards_problem(shards, args.files); !problem.empty()) {
    err << kErrorPrefix << "check-merge: " << problem << "\n";
    return kExitBadInput;
  }
  std::optional<size_t> failing;
  const model::CheckReport report = merged(shards, failing);
  double seconds = 0;
  for (const CheckResultFile& s : shards) seconds = std::max(seconds, s.seconds);
  const CheckResultFile& first = shards.front();
  const bool dfs = first.strategy == "dfs";
  out << "tensorwire check-merge: " << shards.size() << " shards of\n  " << first.search << "\n";
  out << report::check_summary_text(report, dfs, first.exact, first.protocol, seconds);
  out << "shards         ";
  for (const CheckResultFile& s : shards) {
    out << " " << s.shard_index << ": " << format_count(s.report.schedules) << " ("
        << model::check_outcome_name(s.report.outcome) << ")" << (&s != &shards.back() ? "," : "\n");
  }
  if (failing) {
    const CheckResultFile& s = shards[*failing];
    out << "failing shard   " << s.shard_index << " of " << s.shard_count << "\n";
    for (const std::string& p : s.counterexample_problems) out << "  " << p << "\n";
    if (!s.counterexample_schedule.empty()) {
      out << "counterexample: " << s.counterexample_schedule << " (replay: tensorwire check "
          << s.scenario_path << " --replay " << s.counterexample_schedule << ")\n";
    }
  }
  return exit_code_of(report, dfs);
}

}  // namespace tensorwire::app
