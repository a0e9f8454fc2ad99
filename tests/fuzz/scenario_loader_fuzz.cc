// Scenario files (scenario/scenario_loader.h): any text a user may hand to
// `tensorwire run`. The loader must answer a Scenario or a ScenarioError
// naming the file; anything else escaping (a toml++ or standard library
// exception, a crash, an allocation sized by a value in the file) is a bug.
// The text is loaded from memory as "fuzz.toml"; model paths resolve against
// the shipped scenarios/ folder, as for a scenario file kept there.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "scenario/scenario_loader.h"
#include "tests/fuzz/fuzz_check.h"

#ifndef TENSORWIRE_SOURCE_ROOT
#error "tests/fuzz/meson.build passes -DTENSORWIRE_SOURCE_ROOT"
#endif

using namespace tensorwire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)load_scenario_string(text, "fuzz.toml", TENSORWIRE_SOURCE_ROOT "/scenarios");
  } catch (const ScenarioError& e) {
    const std::string_view message = e.what();
    // A model file's errors name the model file, everything else this one.
    FUZZ_CHECK(message.rfind("fuzz.toml:", 0) == 0 || message.find(".toml") != message.npos,
               "a scenario error names its file");
  }
  return 0;
}
