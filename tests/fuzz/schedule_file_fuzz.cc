// Schedule files (model/schedule_file.h), which `tensorwire check --replay`
// reads from wherever the user points it: any text. parse_schedule_file()
// must answer a schedule or an error naming the file and line; a schedule it
// accepts is written back by schedule_file_text() as a file that parses to
// the same schedule.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/schedule_file.h"
#include "tests/fuzz/fuzz_check.h"

using namespace tensorwire;
using namespace tensorwire::model;

namespace {

bool same(const ScheduleFile& a, const ScheduleFile& b) {
  return a.scenario == b.scenario && a.scenario_name == b.scenario_name &&
         a.scenario_hash == b.scenario_hash && a.seed == b.seed && a.strategy == b.strategy &&
         a.outcome == b.outcome && a.faults == b.faults && a.planted_bug == b.planted_bug &&
         a.choices == b.choices;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Result<ScheduleFile> parsed = parse_schedule_file(text, "fuzz.schedule");
  if (!parsed) {
    FUZZ_CHECK(parsed.status().message().rfind("fuzz.schedule:", 0) == 0, "error names the file");
    return 0;
  }
  Result<ScheduleFile> again = parse_schedule_file(schedule_file_text(*parsed), "written");
  FUZZ_CHECK(again.is_ok(), "a written schedule parses");
  FUZZ_CHECK(same(*parsed, *again), "parse(write(schedule)) == schedule");
  return 0;
}
