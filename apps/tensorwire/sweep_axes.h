// The axes of `tensorwire sweep`: each `--set KEY=V1,V2,...` flag is one axis,
// its values listed or written as ranges ("1KiB..64MiB:x4", "1..8:+1",
// "25Gbps..200Gbps:x2"), and the grid is every combination of them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "scenario/scenario_override.h"

namespace tensorwire::app {

// Most values one axis, and points one sweep, may have.
inline constexpr size_t kMaxSweepAxisValues = 1000;
inline constexpr size_t kMaxSweepPoints = 10000;

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;  // as a --set VALUE, in order
};

// "KEY=V1,V2,..." (commas inside [], {} or quotes do not split). A value
// "A..B:xF" is A, A*F, ... up to B (F > 1); "A..B:+S" is A, A+S, ... up to B.
// A and B are sizes ("1KiB", bytes as integers: the values print with the
// largest binary unit that divides them), or numbers with the same unit after
// them ("1.5us", "25Gbps"), or plain numbers. An error says which part is wrong.
Result<SweepAxis> parse_sweep_axis(std::string_view flag);

// The number of points of the grid, or an error when an axis repeats a key or
// the grid exceeds kMaxSweepPoints.
Result<size_t> sweep_point_count(const std::vector<SweepAxis>& axes);

// Point `index` (0 <= index < sweep_point_count) of the grid: the last axis
// varies fastest, as nested loops in the order the flags were given.
std::vector<ScenarioOverride> sweep_point(const std::vector<SweepAxis>& axes, size_t index);

}  // namespace tensorwire::app
