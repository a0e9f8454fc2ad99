#include "apps/tensorwire/sweep_table.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <set>

#include "core/assert.h"

namespace tensorwire::app {
namespace {

using nlohmann::json;

// Results keys that are not figures of the run.
bool skipped_key(const std::string& key) {
  return key == "coverage" || key == "scenario" || key == "schema_version";
}

void flatten(const json& value, const std::string& path, SweepRow& row) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (path.empty() && skipped_key(it.key())) continue;
      flatten(it.value(), path.empty() ? it.key() : path + "." + it.key(), row);
    }
  } else if (value.is_number() || value.is_boolean()) {
    row.cells.emplace_back(path, value);
  } else if (value.is_string() && path.find('.') == std::string::npos) {
    row.cells.emplace_back(path, value);  // top-level names: backend, mode
  }
}

int64_t median(std::vector<int64_t> values) {
  TW_ASSERT(!values.empty());
  std::sort(values.begin(), values.end());
  return values[(values.size() - 1) / 2];
}

// The step figures a reader of a sweep looks for first.
void add_step_figures(const json& results, SweepRow& row) {
  const json steps = results.value("steps", json::array());
  std::vector<int64_t> all_ns;
  uint64_t bytes = 0;
  for (const json& step : steps) {
    if (!step.is_object() || !step.contains("duration_ns")) continue;
    all_ns.push_back(step["duration_ns"].get<int64_t>());
    bytes = step.value("bytes", uint64_t{0});
  }
  if (all_ns.empty()) return;
  const std::vector<int64_t> steady(all_ns.size() > 1 ? all_ns.begin() + 1 : all_ns.begin(),
                                    all_ns.end());
  const int64_t steady_ns = median(steady);
  row.cells.emplace_back("step_time_ns", median(all_ns));
  row.cells.emplace_back("first_step_ns", all_ns.front());
  row.cells.emplace_back("steady_step_ns", steady_ns);
  row.cells.emplace_back("bytes_per_step", bytes);
  const double gbps =
      steady_ns > 0 ? static_cast<double>(bytes) * 8 / static_cast<double>(steady_ns) : 0.0;
  row.cells.emplace_back("bandwidth_gbps", gbps);
}

// Where a Recv's wait went (the results' per-tensor breakdown), as the mean
// over the transfers of the steady steps (the steps after the first, or the
// only one): its parts sum to the mean latency, so they stack.
void add_mean_breakdown(const json& results, SweepRow& row) {
  const json steps = results.value("steps", json::array());
  static constexpr const char* kParts[] = {"control_ns", "queueing_ns", "wire_ns", "copies_ns",
                                           "other_ns", "control_messages"};
  std::vector<double> sums(std::size(kParts), 0.0);
  size_t transfers = 0;
  for (size_t i = steps.size() > 1 ? 1 : 0; i < steps.size(); ++i) {
    if (!steps[i].is_object() || !steps[i].contains("per_tensor")) continue;
    for (const json& t : steps[i]["per_tensor"]) {
      if (!t.is_object() || !t.contains("breakdown")) continue;
      ++transfers;
      for (size_t p = 0; p < std::size(kParts); ++p) {
        sums[p] += t["breakdown"].value(kParts[p], 0.0);
      }
    }
  }
  if (transfers == 0) return;
  for (size_t p = 0; p < std::size(kParts); ++p) {
    row.cells.emplace_back(std::string("breakdown.") + kParts[p],
                           sums[p] / static_cast<double>(transfers));
  }
}

// Where the time went, per kind of resource: the busy time of every resource of
// a kind (each NIC's send side, each copy engine, ...) summed, per step. The
// stacked breakdown plot draws these.
void add_busy_per_kind(const json& results, SweepRow& row) {
  const json resources = results.value("resources", json::array());
  const size_t steps = results.value("steps", json::array()).size();
  if (!resources.is_array() || resources.empty() || steps == 0) return;
  std::vector<std::pair<std::string, double>> per_kind;
  for (const json& r : resources) {
    if (!r.is_object() || !r.contains("kind") || !r.contains("busy_ns")) continue;
    std::string kind = r["kind"].get<std::string>();
    std::replace(kind.begin(), kind.end(), ' ', '_');
    auto it = std::find_if(per_kind.begin(), per_kind.end(),
                           [&](const auto& entry) { return entry.first == kind; });
    if (it == per_kind.end()) it = per_kind.insert(per_kind.end(), {kind, 0.0});
    it->second += r["busy_ns"].get<double>();
  }
  for (const auto& [kind, busy_ns] : per_kind) {
    row.cells.emplace_back("busy_per_step." + kind + "_ns",
                           static_cast<int64_t>(busy_ns / static_cast<double>(steps)));
  }
}

std::string csv_cell(const json& value) {
  if (value.is_null()) return "";
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::vector<std::string> columns_of(const std::vector<SweepRow>& rows) {
  std::vector<std::string> columns;
  std::set<std::string> seen;
  for (const SweepRow& row : rows) {
    for (const auto& [name, value] : row.cells) {
      if (seen.insert(name).second) columns.push_back(name);
    }
  }
  return columns;
}

const json* cell(const SweepRow& row, const std::string& column) {
  for (const auto& [name, value] : row.cells) {
    if (name == column) return &value;
  }
  return nullptr;
}

}  // namespace

SweepRow sweep_row(size_t index, const std::vector<ScenarioOverride>& point,
                   const nlohmann::json& results) {
  SweepRow row;
  row.cells.emplace_back("point", index);
  for (const ScenarioOverride& o : point) row.cells.emplace_back(o.key, o.value);
  add_step_figures(results, row);
  add_busy_per_kind(results, row);
  add_mean_breakdown(results, row);
  flatten(results, "", row);
  return row;
}

std::string sweep_csv(const std::vector<SweepRow>& rows) {
  const std::vector<std::string> columns = columns_of(rows);
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + csv_cell(columns[i]);
  out += "\n";
  for (const SweepRow& row : rows) {
    for (size_t i = 0; i < columns.size(); ++i) {
      const json* value = cell(row, columns[i]);
      out += (i ? "," : "") + (value ? csv_cell(*value) : std::string());
    }
    out += "\n";
  }
  return out;
}

nlohmann::json sweep_json(const std::string& scenario_path, const std::vector<SweepAxis>& axes,
                          const std::vector<SweepRow>& rows) {
  json out = {{"scenario", scenario_path}, {"axes", json::array()}, {"rows", json::array()}};
  for (const SweepAxis& axis : axes)
    out["axes"].push_back({{"key", axis.key}, {"values", axis.values}});
  out["columns"] = columns_of(rows);
  for (const SweepRow& row : rows) {
    json object = json::object();
    for (const auto& [name, value] : row.cells) object[name] = value;
    out["rows"].push_back(std::move(object));
  }
  return out;
}

}  // namespace tensorwire::app
