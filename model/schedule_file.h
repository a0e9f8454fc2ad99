// A schedule as a file: what `tensorwire check` writes for a violation and
// `--replay` reads back. Plain text, one item per line, so a person can read
// and trim it:
//
//   tensorwire-schedule 2   (1: read when no faults were on offer)
//   scenario scenarios/quickstart.toml
//   seed 42
//   strategy random
//   outcome safety
//   faults none            (or qp_error,reg_fail,crash: the faults on offer, one more alternative each)
//   planted_bug none       (or the bug zoo's bug it ran with)
//   choices 5
//   0 2 1 0 1
//
// Every line is checked; an error names the file, the line and what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/choice_strategy.h"

namespace tensorwire::model {

struct ScheduleFile {
  std::string scenario;   // the path it was found with (informative)
  uint64_t seed = 0;      // the scenario seed of the execution
  std::string strategy;   // informative
  std::string outcome;    // informative
  std::vector<FaultKind> faults;  // on offer: the choices include their alternatives
  std::string planted_bug = "none";  // the bug zoo's bug the execution ran with
  std::vector<uint32_t> choices;
};

std::string schedule_file_text(const ScheduleFile& schedule);
// `file` names the source in error messages.
Result<ScheduleFile> parse_schedule_file(const std::string& text, const std::string& file);

}  // namespace tensorwire::model
