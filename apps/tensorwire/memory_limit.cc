#include "apps/tensorwire/memory_limit.h"

#include <fstream>
#include <sstream>

#include "core/units_format.h"
#include "runner/payload_estimate.h"
#include "scenario/units.h"

namespace tensorwire::app {

std::optional<uint64_t> parse_memory_limit(const std::string& text) {
  Result<uint64_t> bytes = parse_bytes(text);
  if (!bytes.is_ok() || *bytes == 0) return std::nullopt;
  return *bytes;
}

void add_memory_limit_option(CLI::App& command, std::string& text) {
  command
      .add_option("--memory-limit", text,
                  "Payload memory the simulated run may hold over all ranks (e.g. 16GiB); a "
                  "run estimated above it is refused before it starts, and an allocation "
                  "past it fails the run as bad input. Default: half of this machine's memory")
      ->type_name("SIZE")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (parse_memory_limit(value)) return "";
            Result<uint64_t> bytes = parse_bytes(value);
            return "memory limit must be a size above 0 such as 16GiB or 512MiB, not '" + value +
                   "'" + (bytes.is_ok() ? std::string() : " (" + bytes.status().message() + ")");
          },
          "", "SIZE"));
}

uint64_t default_memory_limit_bytes() {
  constexpr uint64_t kFallbackBytes = 8ull << 30;
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    if (!(fields >> key >> kib >> unit) || key != "MemTotal:" || unit != "kB") continue;
    return kib > 0 ? kib * 1024 / 2 : kFallbackBytes;
  }
  return kFallbackBytes;
}

uint64_t memory_limit_bytes(const std::string& text) {
  if (text.empty()) return default_memory_limit_bytes();
  const std::optional<uint64_t> bytes = parse_memory_limit(text);
  return bytes ? *bytes : default_memory_limit_bytes();  // the flag's check accepted it
}

std::optional<std::string> payload_memory_over_limit(const std::string& limit_text,
                                                     Scenario& scenario, std::ostream& out) {
  const uint64_t limit_bytes = memory_limit_bytes(limit_text);
  scenario.payload_limit_bytes_total = limit_bytes;
  const uint64_t estimate_bytes = payload_bytes_estimate(scenario);
  if (estimate_bytes > limit_bytes) {
    return "payload memory: about " + format_bytes(estimate_bytes) + " would be held, above the " +
           "memory limit of " + format_bytes(limit_bytes) +
           (!limit_text.empty() ? " (--memory-limit)"
                                : " (--memory-limit's default: half of this machine's memory)");
  }
  if (estimate_bytes >= kPrintedEstimateMinBytes) {
    out << "payload memory: about " << format_bytes(estimate_bytes) << " (limit "
        << format_bytes(limit_bytes) << ")\n";
  }
  return std::nullopt;
}

}  // namespace tensorwire::app
