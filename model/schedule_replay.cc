#include "model/schedule_replay.h"

#include <string>
#include <utility>

#include "core/protocols/protocol_registry.h"
#include "core/trace_sink.h"
#include "scenario/text_file.h"

namespace tensorwire::model {

Result<ScheduleReplay> replay_schedule_file(const std::string& path, Scenario& scenario,
                                            const ScenarioIdentity& identity,
                                            std::optional<uint64_t> seed, bool keep_planted_bug) {
  Result<std::string> text = read_text_file(path);
  if (!text) return Status(text.status().code(), "--replay: " + text.status().message());
  Result<ScheduleFile> schedule = parse_schedule_file(*text, path);
  if (!schedule) return schedule.status();
  if (std::string mismatch = scenario_mismatch(*schedule, identity); !mismatch.empty()) {
    return Status(StatusCode::kInvalidArgument, path + ": " + mismatch);
  }
  if (!keep_planted_bug &&
      !scenario.protocol.descriptor().plant_bug(scenario.protocol.options, schedule->planted_bug)) {
    return Status(StatusCode::kInvalidArgument,
                  path + ": unknown planted_bug '" + schedule->planted_bug + "'");
  }
  ScheduleReplay replay;
  replay.seed = seed.value_or(schedule->seed);
  ReplayStrategy strategy(schedule->choices);
  NullTraceSink none;
  replay.execution = run_execution(model_scenario(scenario), replay.seed, strategy, none, nullptr,
                                   FaultOffer{schedule->faults, schedule->max_faults, {}});
  replay.schedule = std::move(schedule).value();
  return replay;
}

}  // namespace tensorwire::model
