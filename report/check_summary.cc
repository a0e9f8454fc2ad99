#include "report/check_summary.h"

#include <cstdint>

#include "core/units_format.h"
#include "report/coverage_summary.h"

namespace tensorwire::report {

std::string check_summary_text(const model::CheckReport& report, bool dfs, bool exact,
                               std::string_view protocol_name, double seconds) {
  std::string out = "\nschedules       " + format_count(report.schedules);
  if (report.exhausted) {
    out += exact ? " (every order explored)" : " (every order explored, up to the state abstraction)";
  }
  const uint64_t rate =
      static_cast<uint64_t>(seconds > 0 ? static_cast<double>(report.distinct_states) / seconds : 0);
  out += "\ndistinct states " + format_count(report.distinct_states) + " (" + format_count(rate) +
         " states/s, " + format_count(report.choice_points) + " choice points, " +
         format_count(report.events) + " events)\n";
  if (report.transitions.empty()) {
    out += "invariants      the protocol's own (" + std::string(protocol_name) + ")\n";
  } else {
    std::string lines = model::covered_transitions(report.transitions);
    for (size_t at = lines.find('\n'); at != std::string::npos; at = lines.find('\n', at + 1)) {
      lines.replace(at, 1, "\n                ");
    }
    out += "transitions     " + lines + "\n";
  }
  out += coverage_summary_text(report.coverage);
  out += "outcome         " + std::string(model::check_outcome_name(report.outcome));
  if (!report.counterexample && !report.exhausted) {
    out += dfs
               ? " (not exhaustive: stopped after " + format_count(report.schedules) + " schedules)"
               : " in " + format_count(report.schedules) + " schedules";
  }
  out += "\n";
  return out;
}

}  // namespace tensorwire::report
