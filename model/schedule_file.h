// A schedule as a file: what `tensorwire check` writes for a violation and
// `--replay` reads back. Plain text, one item per line, so a person can read
// and trim it:
//
//   tensorwire-schedule 2   (1: read when no faults were on offer)
//   scenario scenarios/quickstart.toml
//   scenario_name quickstart          (optional: the scenario's name)
//   scenario_hash 0x0123456789abcdef  (optional: FNV-1a 64 of the scenario file's bytes)
//   seed 42
//   strategy random
//   outcome safety
//   faults none            (or qp_error,reg_fail,crash,timeout,abort: the faults on offer, one more alternative each)
//   max_faults 2           (optional, 1 when absent: how many may strike in one execution)
//   planted_bug none       (or the bug zoo's bug it ran with)
//   choices 5
//   0 2 1 0 1
//
// Every line is checked; an error names the file, the line and what is wrong.
// scenario_name and scenario_hash identify the scenario the schedule was
// recorded on, so a replay on another one is refused naming both; files
// written before they existed have neither and still replay (unchecked).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/choice_strategy.h"

namespace tensorwire::model {

// The most faults `check --max-faults` lets strike in one execution.
inline constexpr uint32_t kMaxFaultsPerExecution = 16;

struct ScheduleFile {
  std::string scenario;   // the path it was found with (informative)
  std::optional<std::string> scenario_name;  // absent in older files
  std::optional<uint64_t> scenario_hash;     // absent in older files
  uint64_t seed = 0;      // the scenario seed of the execution
  std::string strategy;   // informative
  std::string outcome;    // informative
  std::vector<FaultKind> faults;  // on offer: the choices include their alternatives
  uint32_t max_faults = 1;        // at most this many strike in one execution
  std::string planted_bug = "none";  // the bug zoo's bug the execution ran with
  std::vector<uint32_t> choices;
};

// The scenario a schedule is replayed on: its name, and a hash of its file's
// bytes (the CLI's FNV-1a 64).
struct ScenarioIdentity {
  std::string name;
  uint64_t hash = 0;
};

std::string schedule_file_text(const ScheduleFile& schedule);
// "0x" and 16 lower-case hex digits, as the file writes a scenario hash.
std::string scenario_hash_text(uint64_t hash);
// Empty when `schedule` may replay on `scenario` (the fields it has match,
// or it has none); otherwise "the schedule was recorded for scenario 'A'
// (hash X); this is 'B' (hash Y)".
std::string scenario_mismatch(const ScheduleFile& schedule, const ScenarioIdentity& scenario);
// `file` names the source in error messages.
Result<ScheduleFile> parse_schedule_file(const std::string& text, const std::string& file);

}  // namespace tensorwire::model
