// The table `tensorwire sweep` writes: one row per grid point, made from the
// point's results JSON (`run --json`), as sweep.csv and sweep.json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/tensorwire/sweep_axes.h"
#include "core/status.h"

namespace tensorwire::app {

// One point's row: column name -> value (a number, a boolean or a string).
struct SweepRow {
  std::vector<std::pair<std::string, nlohmann::json>> cells;
};

// The row of point `index` with values `point` and results `results`:
// "point", the swept keys, then the derived step figures (step_time_ns, the
// median step; first_step_ns; steady_step_ns, the median of the steps after
// the first; bytes_per_step; bandwidth_gbps, bytes_per_step over
// steady_step_ns; busy_per_step.<kind>_ns, the busy time of the results'
// resources of each kind summed, per step; breakdown.<part>, where a Recv's
// wait went, the mean per transfer of the steady steps), then every number and boolean of the results by its dotted
// path ("transport.bytes_on_wire", "protocol.control_messages_per_tensor"),
// leaving out lists and the coverage report.
SweepRow sweep_row(size_t index, const std::vector<ScenarioOverride>& point,
                   const nlohmann::json& results);

// Every column of `rows` in first-seen order; a row without one leaves its cell empty.
std::string sweep_csv(const std::vector<SweepRow>& rows);

// {"scenario", "axes": [{"key", "values"}], "columns", "rows": [{column: value}]}.
nlohmann::json sweep_json(const std::string& scenario_path, const std::vector<SweepAxis>& axes,
                          const std::vector<SweepRow>& rows);

}  // namespace tensorwire::app
