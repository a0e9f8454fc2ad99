#include "report/results_compare.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "core/units_format.h"

namespace tensorwire::report {
namespace {

using TensorKey = std::tuple<std::string, uint64_t, uint64_t>;  // name, src, dst

TensorKey key_of(const ResultsTensor& t) { return {t.name, t.src, t.dst}; }

// The wall time when the file measured one, else the backend's (simulated) time.
SideTime side_time(std::optional<int64_t> backend_ns, std::optional<int64_t> measured_ns) {
  SideTime s;
  s.present = true;
  if (measured_ns) {
    s.ns = measured_ns;
    s.source = TimeSource::kMeasured;
  } else {
    s.ns = backend_ns;
    s.source = TimeSource::kSimulated;
  }
  return s;
}

std::map<uint64_t, const ResultsStep*> steps_by_id(const ResultsFile& file) {
  std::map<uint64_t, const ResultsStep*> by_id;
  for (const ResultsStep& s : file.steps) by_id.emplace(s.step_id, &s);
  return by_id;
}

const ResultsStep* find(const std::map<uint64_t, const ResultsStep*>& steps, uint64_t id) {
  const auto it = steps.find(id);
  return it == steps.end() ? nullptr : it->second;
}

// The tensors of a step present in either file: A's order, then B's extras.
void add_tensor_rows(uint64_t step_id, const ResultsStep* a, const ResultsStep* b,
                     ResultsComparison& out) {
  std::map<TensorKey, const ResultsTensor*> in_b;
  if (b != nullptr) {
    for (const ResultsTensor& t : b->tensors) in_b.emplace(key_of(t), &t);
  }
  std::set<TensorKey> in_a;
  const auto row_for = [step_id](const ResultsTensor& t) {
    ComparisonRow row;
    row.kind = ComparisonRow::Kind::kTensor;
    row.step_id = step_id;
    row.tensor = t.name;
    row.src = t.src;
    row.dst = t.dst;
    row.broadcast = t.destination;
    return row;
  };
  if (a != nullptr) {
    for (const ResultsTensor& t : a->tensors) {
      in_a.insert(key_of(t));
      ComparisonRow row = row_for(t);
      row.a = side_time(t.backend_ns, t.measured_ns);
      if (const auto it = in_b.find(key_of(t)); it != in_b.end()) {
        row.b = side_time(it->second->backend_ns, it->second->measured_ns);
        ++out.tensors_in_both;
      } else {
        ++out.tensors_only_in_a;
      }
      out.rows.push_back(std::move(row));
    }
  }
  if (b != nullptr) {
    for (const ResultsTensor& t : b->tensors) {
      if (in_a.count(key_of(t)) != 0) continue;
      ComparisonRow row = row_for(t);
      row.b = side_time(t.backend_ns, t.measured_ns);
      ++out.tensors_only_in_b;
      out.rows.push_back(std::move(row));
    }
  }
}

TimeSource combined(std::optional<TimeSource> so_far, TimeSource next) {
  return !so_far || *so_far == next ? next : TimeSource::kMixed;
}

// The steps both files timed, added up: the run-level ratio.
ComparisonRow total_row(const std::vector<ComparisonRow>& rows) {
  ComparisonRow total;
  total.kind = ComparisonRow::Kind::kTotal;
  total.a.present = true;
  total.b.present = true;
  std::optional<TimeSource> a_source;
  std::optional<TimeSource> b_source;
  for (const ComparisonRow& row : rows) {
    if (row.kind != ComparisonRow::Kind::kStep || !row.a.ns || !row.b.ns) continue;
    total.a.ns = total.a.ns.value_or(0) + *row.a.ns;
    total.b.ns = total.b.ns.value_or(0) + *row.b.ns;
    a_source = combined(a_source, row.a.source);
    b_source = combined(b_source, row.b.source);
  }
  total.a.source = a_source.value_or(TimeSource::kSimulated);
  total.b.source = b_source.value_or(TimeSource::kSimulated);
  return total;
}

std::string format_ratio(std::optional<double> ratio) {
  if (!ratio) return "-";
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.3f", *ratio);
  return buf.data();
}

const char* source_name(TimeSource source) {
  switch (source) {
    case TimeSource::kSimulated:
      return "sim";
    case TimeSource::kMeasured:
      return "wall";
    case TimeSource::kMixed:
      return "mixed";
  }
  return "?";
}

std::string time_cell(const SideTime& t) {
  if (!t.present || !t.ns) return "-";
  return format_duration_ns(*t.ns) + " " + source_name(t.source);
}

std::string label(const ComparisonRow& row) {
  switch (row.kind) {
    case ComparisonRow::Kind::kStep:
      return row.broadcast ? "broadcast" : "step " + std::to_string(row.step_id);
    case ComparisonRow::Kind::kTensor:
      if (row.broadcast) return "  " + row.tensor;
      return "  " + row.tensor + " " + std::to_string(row.src) + "->" + std::to_string(row.dst);
    case ComparisonRow::Kind::kTotal:
      return "steps in both";
  }
  return "?";
}

// Why a row has no ratio: only one file has it, or a side has no time.
std::string note(const ComparisonRow& row) {
  if (!row.a.present) return "only in B";
  if (!row.b.present) return "only in A";
  if (row.kind == ComparisonRow::Kind::kTotal) return row.a.ns ? "" : "no step timed in both";
  const std::string untimed =
      row.kind == ComparisonRow::Kind::kStep ? "never finished in " : "never completed in ";
  if (!row.a.ns && !row.b.ns) return untimed + "A and B";
  if (!row.a.ns) return untimed + "A";
  if (!row.b.ns) return untimed + "B";
  return "";
}

constexpr size_t kColumns = 6;
using TableLine = std::array<std::string, kColumns>;

// Columns padded to their widest cell: the label left-aligned, numbers right.
std::string render_table(const std::vector<TableLine>& lines) {
  std::array<size_t, kColumns> width{};
  for (const TableLine& line : lines) {
    for (size_t c = 0; c < kColumns; ++c) width[c] = std::max(width[c], line[c].size());
  }
  std::string out;
  for (const TableLine& line : lines) {
    std::string text;
    for (size_t c = 0; c < kColumns; ++c) {
      const std::string& cell = line[c];
      const std::string pad(width[c] - cell.size(), ' ');
      if (c > 0) text += "  ";
      text += (c == 0 || c == kColumns - 1) ? cell + pad : pad + cell;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  return out;
}

std::string file_line(const char* side, const ResultsFile& f) {
  return std::string(side) + ": " + f.path + " (backend " + f.backend + ", scenario " +
         f.scenario_name + ", seed " + std::to_string(f.seed) + ")\n";
}

}  // namespace

ResultsComparison compare_results(const ResultsFile& a, const ResultsFile& b) {
  const auto a_steps = steps_by_id(a);
  const auto b_steps = steps_by_id(b);
  std::set<uint64_t> step_ids;
  for (const auto& [id, step] : a_steps) step_ids.insert(id);
  for (const auto& [id, step] : b_steps) step_ids.insert(id);

  ResultsComparison out;
  for (const uint64_t id : step_ids) {
    const ResultsStep* in_a = find(a_steps, id);
    const ResultsStep* in_b = find(b_steps, id);
    ComparisonRow row;
    row.kind = ComparisonRow::Kind::kStep;
    row.step_id = id;
    if (in_a != nullptr) row.a = side_time(in_a->backend_ns, in_a->measured_ns);
    if (in_b != nullptr) row.b = side_time(in_b->backend_ns, in_b->measured_ns);
    row.broadcast = (in_a != nullptr && in_a->broadcast) || (in_b != nullptr && in_b->broadcast);
    if (in_a != nullptr && in_b != nullptr) {
      ++out.steps_in_both;
    } else if (in_a != nullptr) {
      ++out.steps_only_in_a;
    } else {
      ++out.steps_only_in_b;
    }
    out.rows.push_back(std::move(row));
    add_tensor_rows(id, in_a, in_b, out);
  }
  out.rows.push_back(total_row(out.rows));
  return out;
}

std::optional<double> b_over_a(const ComparisonRow& row) {
  if (!row.a.ns || !row.b.ns || *row.a.ns <= 0) return std::nullopt;
  return static_cast<double>(*row.b.ns) / static_cast<double>(*row.a.ns);
}

std::optional<double> simulated_over_measured(const ComparisonRow& row) {
  if (!row.a.ns || !row.b.ns) return std::nullopt;
  const auto ratio = [](int64_t simulated, int64_t measured) -> std::optional<double> {
    if (measured <= 0) return std::nullopt;
    return static_cast<double>(simulated) / static_cast<double>(measured);
  };
  if (row.a.source == TimeSource::kSimulated && row.b.source == TimeSource::kMeasured) {
    return ratio(*row.a.ns, *row.b.ns);
  }
  if (row.a.source == TimeSource::kMeasured && row.b.source == TimeSource::kSimulated) {
    return ratio(*row.b.ns, *row.a.ns);
  }
  return std::nullopt;
}

std::string comparison_text(const ResultsFile& a, const ResultsFile& b,
                            const ResultsComparison& comparison) {
  std::string out = file_line("A", a) + file_line("B", b);
  if (a.scenario_name != b.scenario_name) {
    out += "note: the two files ran different scenarios; only matching steps and tensors "
           "compare\n";
  }
  out +=
      "Step times: start to end; tensor times: Recv call to done; a broadcast: its last "
      "destination's done time, and each destination's. sim: simulated, wall: measured wall "
      "time.\n\n";

  std::vector<TableLine> lines;
  lines.push_back({"", "A", "B", "B/A", "sim/measured", ""});
  for (const ComparisonRow& row : comparison.rows) {
    lines.push_back({label(row), time_cell(row.a), time_cell(row.b), format_ratio(b_over_a(row)),
                     format_ratio(simulated_over_measured(row)), note(row)});
  }
  out += render_table(lines);

  out += "\nsteps: " + std::to_string(comparison.steps_in_both) + " in both, " +
         std::to_string(comparison.steps_only_in_a) + " only in A, " +
         std::to_string(comparison.steps_only_in_b) + " only in B; tensors: " +
         std::to_string(comparison.tensors_in_both) + " in both, " +
         std::to_string(comparison.tensors_only_in_a) + " only in A, " +
         std::to_string(comparison.tensors_only_in_b) + " only in B\n";
  return out;
}

}  // namespace tensorwire::report
