#include "scenario/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <system_error>

namespace tensorwire {
namespace {

// The number at the start of a quantity, and the unit after it.
struct Quantity {
  double value = 0;
  std::string_view unit;
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

Status bad(std::string_view text, std::string_view kind, const std::string& why,
           std::string_view examples) {
  return Status(StatusCode::kInvalidArgument, "'" + std::string(text) + "' is not " +
                                                  std::string(kind) + ": " + why + " (write e.g. " +
                                                  std::string(examples) + ")");
}

// Splits "12.5 GB/s" into 12.5 and "GB/s". The number is plain decimal with an
// optional fraction and exponent; signs, "inf" and "nan" are rejected here so
// every caller gets a finite, non-negative value.
Result<Quantity> split_quantity(std::string_view text, std::string_view kind,
                                std::string_view examples) {
  std::string_view s = trim(text);
  if (s.empty()) return bad(text, kind, "it is empty", examples);
  if (s.front() == '-') return bad(text, kind, "it is negative", examples);
  size_t i = 0;
  size_t digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return bad(text, kind, "it does not start with a number", examples);
  // An exponent only when digits follow, so a unit starting with 'e' could never be eaten.
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    if (j < s.size() && is_digit(s[j])) {
      while (j < s.size() && is_digit(s[j])) ++j;
      i = j;
    }
  }
  Quantity q;
  std::string_view number = s.substr(0, i);
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), q.value);
  if (ec != std::errc() || end != number.data() + number.size() || !std::isfinite(q.value)) {
    return bad(text, kind, "the number is out of range", examples);
  }
  q.unit = trim(s.substr(i));
  return q;
}

struct Unit {
  std::string_view name;
  double factor;
};

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Decimal (1000^n) or binary (1024^n) multiplier of a prefix letter
// (case-insensitive), 0 when the letter is not a prefix.
double prefix_factor(char letter, bool binary) {
  const double base = binary ? 1024.0 : 1000.0;
  switch (lower(letter)) {
    case 'k':
      return base;
    case 'm':
      return base * base;
    case 'g':
      return base * base * base;
    case 't':
      return base * base * base * base;
    default:
      return 0;
  }
}

// "Gi" -> 1024^3, "G" -> 1e9, "" -> 1; 0 when not a prefix.
double parse_prefix(std::string_view prefix) {
  if (prefix.empty()) return 1;
  if (prefix.size() == 1) return prefix_factor(prefix[0], false);
  if (prefix.size() == 2 && prefix[1] == 'i') return prefix_factor(prefix[0], true);
  return 0;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Bytes per second per unit of `unit`, 0 when it is not a bandwidth unit.
double bandwidth_unit_factor(std::string_view unit) {
  // Bits per second.
  constexpr std::array<std::string_view, 3> bit_suffixes = {"bps", "b/s", "bit/s"};
  for (std::string_view suffix : bit_suffixes) {
    if (ends_with(unit, suffix)) {
      double p = parse_prefix(unit.substr(0, unit.size() - suffix.size()));
      return p / 8.0;
    }
  }
  // Bytes per second.
  constexpr std::array<std::string_view, 2> byte_suffixes = {"B/s", "Bps"};
  for (std::string_view suffix : byte_suffixes) {
    if (ends_with(unit, suffix)) return parse_prefix(unit.substr(0, unit.size() - suffix.size()));
  }
  return 0;
}

}  // namespace

Result<double> parse_bandwidth_bytes_per_s(std::string_view text) {
  constexpr std::string_view kind = "a bandwidth";
  constexpr std::string_view examples = "\"100Gbps\", \"12.5GB/s\", \"10GiB/s\"";
  Result<Quantity> q = split_quantity(text, kind, examples);
  if (!q) return q.status();
  if (q->unit.empty()) return bad(text, kind, "it has no unit", examples);
  double factor = bandwidth_unit_factor(q->unit);
  if (factor == 0) return bad(text, kind, "unknown unit '" + std::string(q->unit) + "'", examples);
  double bytes_per_s = q->value * factor;
  if (!(bytes_per_s > 0) || !std::isfinite(bytes_per_s)) {
    return bad(text, kind, "it must be greater than zero", examples);
  }
  return bytes_per_s;
}

Result<TimeNs> parse_duration_ns(std::string_view text) {
  constexpr std::string_view kind = "a duration";
  constexpr std::string_view examples = "\"1.5us\", \"800ns\", \"30ms\", \"2s\"";
  Result<Quantity> q = split_quantity(text, kind, examples);
  if (!q) return q.status();
  double factor = 0;
  if (q->unit.empty()) {
    if (q->value != 0) return bad(text, kind, "it has no unit", examples);
    factor = 1;
  } else if (q->unit == "ns") {
    factor = 1;
  } else if (q->unit == "us" || q->unit == "\xC2\xB5s" || q->unit == "\xCE\xBCs") {
    factor = 1e3;
  } else if (q->unit == "ms") {
    factor = 1e6;
  } else if (q->unit == "s") {
    factor = 1e9;
  } else {
    return bad(text, kind, "unknown unit '" + std::string(q->unit) + "'", examples);
  }
  double ns = std::nearbyint(q->value * factor);
  // 2^63 is exactly representable; anything at or above it does not fit TimeNs.
  if (!(ns < 9223372036854775808.0)) return bad(text, kind, "it is too long", examples);
  return static_cast<TimeNs>(ns);
}

Result<uint64_t> parse_bytes(std::string_view text) {
  constexpr std::string_view kind = "a size in bytes";
  constexpr std::string_view examples = "\"4096\", \"16MiB\", \"1.5GB\"";
  Result<Quantity> q = split_quantity(text, kind, examples);
  if (!q) return q.status();
  double factor = 0;
  if (q->unit.empty() || q->unit == "B") {
    factor = 1;
  } else if (ends_with(q->unit, "B")) {
    factor = parse_prefix(q->unit.substr(0, q->unit.size() - 1));
  }
  if (factor == 0) return bad(text, kind, "unknown unit '" + std::string(q->unit) + "'", examples);
  // Exact for plain integers (digits only, no unit): doubles lose precision
  // above 2^53, and a byte count must not silently change.
  std::string_view s = trim(text);
  if (q->unit.empty() && s.find_first_not_of("0123456789") == std::string_view::npos) {
    uint64_t exact = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), exact);
    if (ec != std::errc() || end != s.data() + s.size()) {
      return bad(text, kind, "it is too large", examples);
    }
    return exact;
  }
  double bytes = q->value * factor;
  if (!(bytes < 18446744073709551616.0)) return bad(text, kind, "it is too large", examples);
  if (bytes != std::floor(bytes)) {
    return bad(text, kind, "it is not a whole number of bytes", examples);
  }
  return static_cast<uint64_t>(bytes);
}

}  // namespace tensorwire
