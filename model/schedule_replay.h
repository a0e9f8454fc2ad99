// Replays a counterexample's schedule file: the scenario's execution re-run
// with the recorded choices, seed, faults and planted bug, so a failing seed
// replays exactly (`tensorwire check SCENARIO --replay FILE`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "model/explorer.h"
#include "model/schedule_file.h"
#include "scenario/scenario.h"

namespace tensorwire::model {

struct ScheduleReplay {
  ScheduleFile schedule;
  uint64_t seed = 0;  // the one the execution ran with
  // The re-run execution; `diverged` says the schedule did not fit it.
  Execution execution;
};

// Reads and parses `path`, plants the file's bug in `scenario` unless
// `keep_planted_bug` (the user planted one on the command line), and re-runs
// the execution. `seed` overrides the file's. Errors name the file: it cannot
// be read or parsed, it was recorded for another scenario than `identity`
// (checked before anything runs), or its planted bug is unknown to the
// scenario's protocol.
Result<ScheduleReplay> replay_schedule_file(const std::string& path, Scenario& scenario,
                                            const ScenarioIdentity& identity,
                                            std::optional<uint64_t> seed, bool keep_planted_bug);

}  // namespace tensorwire::model
