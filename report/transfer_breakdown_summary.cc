#include "report/transfer_breakdown_summary.h"

#include <map>
#include <vector>

#include "core/units_format.h"

namespace tensorwire::report {
namespace {

std::string pad_right(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// "control 2 msgs 4 us, queueing 0 ns, wire 6 us, copies 0 ns, other 2 us"
std::string parts(const TransferBreakdown& b) {
  return "control " + format_count(b.control_messages) + " msgs " +
         format_duration_ns(b.control_ns) + ", queueing " + format_duration_ns(b.queueing_ns) +
         ", wire " + format_duration_ns(b.wire_ns) + ", copies " +
         format_duration_ns(b.copies_ns) + ", other " + format_duration_ns(b.other_ns);
}

// Phases in the order they first ran, each with its transfers' sum.
struct PhaseTotal {
  std::string phase;
  uint64_t transfers = 0;
  TransferBreakdown sum;
};

std::vector<PhaseTotal> phase_totals(const WorkloadResult& w) {
  std::vector<PhaseTotal> totals;
  std::map<std::string, size_t> index;
  for (const StepResult& s : w.steps) {
    for (const TransferResult& t : s.transfers) {
      if (!t.breakdown) continue;
      auto [it, fresh] = index.try_emplace(t.phase, totals.size());
      if (fresh) totals.push_back(PhaseTotal{t.phase, 0, {}});
      totals[it->second].transfers += 1;
      totals[it->second].sum += *t.breakdown;
    }
  }
  return totals;
}

}  // namespace

std::string transfer_breakdown_section(const RunReport& report, size_t max_tensor_rows) {
  size_t rows = 0;
  for (const StepResult& s : report.workload.steps) {
    for (const TransferResult& t : s.transfers) rows += t.breakdown ? 1 : 0;
  }
  if (rows == 0) return "";
  std::string out =
      "where each Recv waited (each instant: copies, else wire, else control, else queueing, "
      "else other)\n";
  if (rows <= max_tensor_rows) {
    for (const StepResult& s : report.workload.steps) {
      for (const TransferResult& t : s.transfers) {
        if (!t.breakdown) continue;
        const std::string who = "step " + std::to_string(s.step_id) + " '" + t.name + "' " +
                                std::to_string(t.src) + "->" + std::to_string(t.dst);
        out += "  " + pad_right(who, 30) + " " + format_duration_ns(t.breakdown->total_ns()) +
               ": " + parts(*t.breakdown) + "\n";
      }
    }
    return out + "\n";
  }
  for (const PhaseTotal& p : phase_totals(report.workload)) {
    // Concurrent Recvs' waits overlap: the sums are of waits, not of the run.
    const std::string who =
        "phase '" + p.phase + "' (" + format_count(p.transfers) + " Recvs, summed)";
    out += "  " + pad_right(who, 30) + " " + format_duration_ns(p.sum.total_ns()) + ": " +
           parts(p.sum) + "\n";
  }
  return out + "\n";
}

}  // namespace tensorwire::report
