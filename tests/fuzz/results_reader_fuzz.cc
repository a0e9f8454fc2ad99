// Results JSON files (report/results_reader.h), which `tensorwire compare`
// reads from wherever the user points it: any text. parse_results_json()
// must answer the results or an error starting "PATH: " (never an nlohmann
// exception, never a crash), and what it accepts keeps its promises: step ids
// unique, no negative time.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

#include "report/results_reader.h"
#include "tests/fuzz/fuzz_check.h"

using namespace tensorwire;
using namespace tensorwire::report;

namespace {

bool non_negative(const std::optional<int64_t>& ns) { return !ns || *ns >= 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<ResultsFile> results = parse_results_json(text, "fuzz.json");
  if (!results) {
    FUZZ_CHECK(results.status().message().rfind("fuzz.json: ", 0) == 0, "error names the file");
    return 0;
  }
  std::set<uint64_t> ids;
  for (const ResultsStep& step : results->steps) {
    FUZZ_CHECK(ids.insert(step.step_id).second, "step ids are unique");
    FUZZ_CHECK(non_negative(step.measured_ns), "no negative measured step time");
    for (const ResultsTensor& t : step.tensors) {
      FUZZ_CHECK(non_negative(t.backend_ns) && non_negative(t.measured_ns), "no negative time");
    }
  }
  return 0;
}
