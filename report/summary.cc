#include "report/summary.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>

#include "report/results_json.h"
#include "report/time_account.h"
#include "report/transfer_breakdown_summary.h"
#include "core/units_format.h"

namespace tensorwire::report {
namespace {

// "12 tensor requests, 4 meta data updates": each control message counter of
// the protocol, by its name.
std::string control_message_breakdown(const ProtocolCounters& counters) {
  std::string out;
  for (const ProtocolCounter& c : counters) {
    if (c.role != CounterRole::kControlMessage) continue;
    std::string name = c.name;
    for (char& ch : name) ch = ch == '_' ? ' ' : ch;
    if (!out.empty()) out += ", ";
    out += format_count(c.value) + " " + name;
  }
  return out.empty() ? "none" : out;
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string pad_right(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return format_count(n) + " " + (n == 1 ? one : many);
}

uint64_t step_bytes(const StepResult& step) {
  uint64_t bytes = 0;
  for (const TransferResult& t : step.transfers) bytes += t.bytes;
  return bytes;
}

// index: the step's position in the run, which picks its wire bytes ("-" for a
// step that never finished).
std::string step_row(const RunReport& report, size_t index) {
  const StepResult& step = report.workload.steps[index];
  const std::string wire = index < report.step_wire_bytes.size()
                               ? format_bytes(report.step_wire_bytes[index])
                               : std::string("-");
  return pad_left(std::to_string(step.step_id), 6) + "  " +
         pad_left(format_duration_ns(step.end_ns - step.start_ns), 10) + "  " +
         pad_left(format_count(step.transfers.size()), 8) + "  " +
         pad_left(format_bytes(step_bytes(step)), 12) + "  " + pad_left(wire, 12) + "\n";
}

std::string total_line(const char* label, const std::string& value) {
  return "  " + pad_right(label, 24) + value + "\n";
}

// The header: what ran.
std::string run_header(const RunReport& report) {
  std::string out = "scenario  " + report.scenario_name;
  if (!report.scenario_path.empty()) out += " (" + report.scenario_path + ")";
  out += "\n";
  out += "seed " + std::to_string(report.seed) + ", " +
         (report.payload ? "payload mode" : "timing-only mode") + ", " +
         plural(report.ranks, "rank", "ranks") + ", backend " + report.backend + ", protocol " +
         report.protocol + "\n\n";
  return out;
}

// The per-step table of a point-to-point workload, and the spread of step times.
std::string step_table(const RunReport& report, const SummaryOptions& options) {
  const std::vector<StepResult>& steps = report.workload.steps;
  if (steps.empty()) return "no steps ran\n\n";
  std::string out = "  step        time   tensors  tensor bytes    wire bytes\n";
  const size_t max_rows = std::max<size_t>(options.max_step_rows, 2);
  const size_t tail = steps.size() > max_rows ? std::min<size_t>(5, max_rows / 2) : 0;
  const size_t head = steps.size() > max_rows ? max_rows - tail : steps.size();
  for (size_t i = 0; i < head; ++i) out += step_row(report, i);
  if (tail > 0) {
    out += "   ... " + plural(steps.size() - head - tail, "step", "steps") + " not shown\n";
    for (size_t i = steps.size() - tail; i < steps.size(); ++i) out += step_row(report, i);
  }
  // Only steps that finished have an end (step_wire_bytes holds one entry
  // per finished step, in order).
  const size_t finished = std::min(steps.size(), report.step_wire_bytes.size());
  if (finished > 1) {
    TimeNs min_ns = std::numeric_limits<TimeNs>::max();
    TimeNs max_ns = std::numeric_limits<TimeNs>::min();
    TimeNs sum_ns = 0;
    for (size_t i = 0; i < finished; ++i) {
      const TimeNs d = steps[i].end_ns - steps[i].start_ns;
      min_ns = std::min(min_ns, d);
      max_ns = std::max(max_ns, d);
      sum_ns += d;
    }
    out += "  step time min " + format_duration_ns(min_ns) + ", mean " +
           format_duration_ns(sum_ns / static_cast<TimeNs>(finished)) + ", max " +
           format_duration_ns(max_ns) + "\n";
  }
  return out + "\n";
}

// "chunks 1,024, control messages 96, peak ib bytes 8 MiB": every counter of
// the protocol, by its name (counters of bytes in bytes).
std::string counter_list(const ProtocolCounters& counters) {
  std::string out;
  for (const ProtocolCounter& c : counters) {
    std::string name = c.name;
    for (char& ch : name) ch = ch == '_' ? ' ' : ch;
    const bool bytes = c.name.size() > 6 && c.name.ends_with("_bytes");
    if (!out.empty()) out += ", ";
    out += name + " " + (bytes ? format_bytes(c.value) : format_count(c.value));
  }
  return out.empty() ? "none" : out;
}

// The protocol line: control messages per tensor for a point-to-point
// workload, the counters by name for a collective one.
std::string protocol_line(const RunReport& report) {
  const ProtocolCounters p = total_protocol_counters(report);
  if (report.collective_run()) return total_line("protocol counters", counter_list(p));
  std::array<char, 32> ratio{};
  std::snprintf(ratio.data(), ratio.size(), "%.2f", control_messages_per_tensor(report));
  return total_line("control msgs / tensor",
                    std::string(ratio.data()) + " (" + format_count(control_messages(report)) +
                        " over " + plural(tensors_transferred(report), "tensor", "tensors") +
                        ": " + control_message_breakdown(p) + ")");
}

// The totals people compare protocols by.
std::string totals(const RunReport& report) {
  const TransportStats& t = report.total_stats;
  std::string out;
  out += total_line(report.wall_time ? "wall time" : "simulated time",
                    format_duration_ns(report.end_ns) + " (" +
                        plural(report.events_processed, "event", "events") + ")");
  out += total_line("bytes on the wire",
                    format_bytes(t.bytes_on_wire_tx) + " (" + format_count(t.bytes_on_wire_tx) +
                        " B)");
  out += protocol_line(report);
  out += total_line("RDMA operations",
                    plural(t.rdma_writes_with_imm, "write", "writes") + " with immediate, " +
                        plural(t.rdma_writes, "plain write", "plain writes") + ", " +
                        plural(t.rdma_reads, "read", "reads") + ", " +
                        plural(t.sends, "send", "sends"));
  out += total_line("copied by the CPU", format_bytes(t.cpu_copy_bytes) + " (" +
                                             plural(t.cpu_copies, "copy", "copies") + ")");
  out += total_line("copied by copy engines", format_bytes(t.copy_engine_bytes) + " (" +
                                                  plural(t.copy_engine_copies, "copy", "copies") +
                                                  ")");
  out += total_line("registrations", format_count(t.registrations) + " (" +
                                         format_bytes(t.registered_bytes) + " registered, " +
                                         format_count(t.deregistrations) + " deregistered)");
  if (t.rnr_retries > 0 || t.completions_error > 0) {
    out += total_line("transport trouble",
                      plural(t.rnr_retries, "receiver-not-ready retry",
                             "receiver-not-ready retries") +
                          ", " +
                          plural(t.completions_error, "error completion", "error completions"));
  }
  return out + "\n";
}

std::string pass_line(const RunReport& report) {
  if (report.collective) return report.collective->pass_line(report.payload);
  return report.payload ? "PASS: every tensor delivered and its content checked\n"
                        : "PASS: every Recv completed (timing-only: content not checked)\n";
}

std::string verdict(const RunReport& report, const SummaryOptions& options) {
  if (report.passed()) return pass_line(report);
  std::string out = "FAIL: " + plural(report.problems.size(), "problem", "problems") + "\n";
  const size_t shown = std::min(report.problems.size(), options.max_problems);
  for (size_t i = 0; i < shown; ++i) out += "  - " + problem_line(report.problems[i]) + "\n";
  if (shown < report.problems.size()) {
    out += "  ... and " + format_count(report.problems.size() - shown) +
           " more (all of them are in the results JSON)\n";
  }
  return out;
}

}  // namespace

std::string summary_text(const RunReport& report, const SummaryOptions& options) {
  std::string out = run_header(report);
  if (report.collective_run()) {
    // The protocol renders its own section; one that could not plan has none.
    if (report.collective) out += report.collective->summary_section();
  } else {
    out += step_table(report, options);
    out += transfer_breakdown_section(report);
  }
  out += totals(report);
  out += time_account_section(report);
  out += verdict(report, options);
  return out;
}

}  // namespace tensorwire::report
