#include "apps/tensorwire/sweep_axes.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>

#include "core/assert.h"
#include "scenario/units.h"

namespace tensorwire::app {
namespace {

Status bad(const std::string& what) { return Status(StatusCode::kInvalidArgument, what); }

// Splits at commas outside brackets, braces and quotes.
std::vector<std::string> split_values(std::string_view text) {
  std::vector<std::string> parts(1);
  int depth = 0;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.emplace_back();
      continue;
    }
    parts.back() += c;
  }
  return parts;
}

// A whole number as digits; anything else in its shortest exact form.
std::string format_number(double v) {
  char buffer[64];
  const bool whole = std::fabs(v) < 1e15 && v == std::floor(v);
  const auto r = whole
                     ? std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::fixed, 0)
                     : std::to_chars(buffer, buffer + sizeof buffer, v);
  TW_ASSERT(r.ec == std::errc());
  return std::string(buffer, r.ptr);
}

// The largest binary unit that divides `bytes` ("64MiB"), else plain bytes.
std::string format_size(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int i = 0; i < 4; ++i) {
    const uint64_t unit = 1ull << (10 * (4 - i));
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + kUnits[i];
  }
  return std::to_string(bytes);
}

struct NumberWithUnit {
  double number = 0;
  std::string unit;
};

std::optional<NumberWithUnit> split_number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v)) return std::nullopt;
  return NumberWithUnit{v, std::string(end)};
}

struct RangeStep {
  bool geometric = false;
  double by = 0;
};

Result<RangeStep> parse_step(const std::string& text, const std::string& range) {
  const std::string where = "range '" + range + "': ";
  if (text.size() < 2 || (text[0] != 'x' && text[0] != '+')) {
    return bad(where + "the step after ':' is xF (times F) or +S (plus S), not '" + text + "'");
  }
  RangeStep step{text[0] == 'x', 0};
  char* end = nullptr;
  step.by = std::strtod(text.c_str() + 1, &end);
  if (*end != '\0' && !step.geometric) {
    Result<uint64_t> size = parse_bytes(text.substr(1));  // "+1MiB"
    if (!size) return bad(where + "'" + text.substr(1) + "' is not a number or a size");
    step.by = static_cast<double>(*size);
  } else if (*end != '\0' || !std::isfinite(step.by)) {
    return bad(where + "'" + text.substr(1) + "' is not a number");
  }
  if (step.geometric ? step.by <= 1 : step.by <= 0) {
    return bad(where +
               (step.geometric ? "the factor must be above 1" : "the step must be above 0"));
  }
  return step;
}

// from, from (x|+) by, ... while <= to.
Result<std::vector<double>> expand(double from, double to, RangeStep step,
                                   const std::string& range) {
  if (to < from) return bad("range '" + range + "': the end is below the start");
  if (step.geometric && from <= 0)
    return bad("range '" + range + "': a geometric range starts above 0");
  std::vector<double> values;
  for (double v = from; v <= to * (1 + 1e-12); v = step.geometric ? v * step.by : v + step.by) {
    if (values.size() == kMaxSweepAxisValues) {
      return bad("range '" + range + "' has more than " + std::to_string(kMaxSweepAxisValues) +
                 " values");
    }
    values.push_back(v);
  }
  return values;
}

Result<std::vector<std::string>> expand_range(const std::string& range) {
  const size_t dots = range.find("..");
  const size_t colon = range.find(':', dots);
  if (colon == std::string::npos) {
    return bad("range '" + range + "' needs a step: A..B:xF (times F) or A..B:+S (plus S)");
  }
  const std::string from = range.substr(0, dots);
  const std::string to = range.substr(dots + 2, colon - dots - 2);
  Result<RangeStep> step = parse_step(range.substr(colon + 1), range);
  if (!step) return step.status();
  std::vector<std::string> out;
  Result<uint64_t> from_bytes = parse_bytes(from);
  Result<uint64_t> to_bytes = parse_bytes(to);
  std::optional<NumberWithUnit> a = split_number(from);
  std::optional<NumberWithUnit> b = split_number(to);
  const bool sizes = from_bytes && to_bytes && !(a && b && a->unit.empty() && b->unit.empty());
  if (!sizes && !(a && b && a->unit == b->unit)) {
    return bad("range '" + range + "': the ends are neither sizes nor numbers with the same unit");
  }
  Result<std::vector<double>> values =
      sizes ? expand(static_cast<double>(*from_bytes), static_cast<double>(*to_bytes), *step, range)
            : expand(a->number, b->number, *step, range);
  if (!values) return values.status();
  for (double v : *values) {
    out.push_back(sizes ? format_size(static_cast<uint64_t>(std::llround(v)))
                        : format_number(v) + a->unit);
  }
  return out;
}

}  // namespace

Result<SweepAxis> parse_sweep_axis(std::string_view flag) {
  Result<ScenarioOverride> kv = parse_scenario_override(flag);
  if (!kv) return kv.status();
  SweepAxis axis{kv->key, {}};
  for (const std::string& part : split_values(kv->value)) {
    if (part.empty()) return bad("--set " + std::string(flag) + ": an empty value");
    const bool range = part.find("..") != std::string::npos && part[0] != '"' && part[0] != '[';
    if (!range) {
      axis.values.push_back(part);
      continue;
    }
    Result<std::vector<std::string>> values = expand_range(part);
    if (!values)
      return Status(StatusCode::kInvalidArgument,
                    "--set " + axis.key + ": " + values.status().message());
    axis.values.insert(axis.values.end(), values->begin(), values->end());
  }
  if (axis.values.size() > kMaxSweepAxisValues) {
    return bad("--set " + axis.key + ": more than " + std::to_string(kMaxSweepAxisValues) +
               " values");
  }
  return axis;
}

Result<size_t> sweep_point_count(const std::vector<SweepAxis>& axes) {
  std::set<std::string> keys;
  size_t points = 1;
  for (const SweepAxis& axis : axes) {
    TW_ASSERT(!axis.values.empty());
    if (!keys.insert(axis.key).second) return bad("--set " + axis.key + " is given twice");
    points *= axis.values.size();
    if (points > kMaxSweepPoints) {
      return bad("the grid has more than " + std::to_string(kMaxSweepPoints) + " points");
    }
  }
  return points;
}

std::vector<ScenarioOverride> sweep_point(const std::vector<SweepAxis>& axes, size_t index) {
  std::vector<ScenarioOverride> point(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    const SweepAxis& axis = axes[i];
    point[i] = ScenarioOverride{axis.key, axis.values[index % axis.values.size()]};
    index /= axis.values.size();
  }
  TW_ASSERT_MSG(index == 0, "a point index within the grid");
  return point;
}

}  // namespace tensorwire::app
