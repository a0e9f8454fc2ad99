#include "core/units_format.h"

#include <array>
#include <cstdio>

namespace tensorwire {
namespace {

// Prints `value` with three significant digits. Returns false when rounding
// carried it to `next_unit_at` or beyond, so the caller moves up a unit rather
// than print "1000 us".
bool three_significant(double value, double next_unit_at, std::string& out) {
  std::array<char, 64> buf{};
  int decimals = value < 9.995 ? 2 : (value < 99.95 ? 1 : 0);
  std::snprintf(buf.data(), buf.size(), "%.*f", decimals, value);
  double printed = 0;
  std::sscanf(buf.data(), "%lf", &printed);
  if (printed >= next_unit_at) return false;
  out = buf.data();
  return true;
}

}  // namespace

std::string format_bytes(uint64_t bytes) {
  static constexpr std::array<const char*, 7> kUnits = {"B",   "KiB", "MiB", "GiB",
                                                        "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  std::string digits;
  // 1023.7 KiB rounds to "1024": say "1.00 MiB" instead.
  if (!three_significant(value, unit + 1 < kUnits.size() ? 1024.0 : 1e300, digits)) {
    ++unit;
    three_significant(value / 1024.0, 1e300, digits);
  }
  return digits + " " + kUnits[unit];
}

std::string format_duration_ns(int64_t duration_ns) {
  struct Unit {
    const char* name;
    double ns;
  };
  static constexpr std::array<Unit, 4> kUnits = {
      Unit{"ns", 1.0}, Unit{"us", 1e3}, Unit{"ms", 1e6}, Unit{"s", 1e9}};
  const bool negative = duration_ns < 0;
  // Through uint64 so that INT64_MIN has a magnitude.
  const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(duration_ns)
                                      : static_cast<uint64_t>(duration_ns);
  const std::string sign = negative ? "-" : "";
  if (magnitude < 1000) return sign + std::to_string(magnitude) + " ns";
  std::string digits;
  for (size_t u = 1; u < kUnits.size(); ++u) {
    const double value = static_cast<double>(magnitude) / kUnits[u].ns;
    const bool last = u + 1 == kUnits.size();
    if (!last && value >= 1000.0) continue;
    if (three_significant(value, last ? 1e300 : 1000.0, digits)) {
      return sign + digits + " " + kUnits[u].name;
    }
  }
  // Unreachable: the last unit accepts any value.
  return sign + std::to_string(magnitude) + " ns";
}

std::string format_count(uint64_t count) {
  std::string digits = std::to_string(count);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace tensorwire
