// results_json_text: the results document as text. The small, irregular part
// (header, totals, the time account, a collective's keys) is built as a tree
// and laid out; the bulk (a point-to-point run's steps with their per-tensor
// records, the per-rank counters, the resources) is written straight from the
// report in the same bytes the tree would give (tests/report checks the two
// agree).
#include <algorithm>
#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/json_text.h"
#include "report/results_json.h"
#include "report/results_json_parts.h"

namespace tensorwire::report {
namespace {

using Json = nlohmann::ordered_json;

// The steps sit at depth 1 (the array), 2 (a step), 3 (its per_tensor list);
// a record at kIndentedDepth, on one line.
constexpr int kStepsDepth = 1;
constexpr int kStepDepth = 2;
constexpr int kPerTensorDepth = 3;
static_assert(kPerTensorDepth + 1 == json_text::kIndentedDepth);

template <std::integral T>
void append_optional(std::string& out, std::optional<T> value) {
  if (value) {
    json_text::append_integer(out, *value);
  } else {
    out += "null";
  }
}

template <std::integral T>
void append_optional(json_text::BufferedText& out, std::optional<T> value) {
  if (value) {
    out.integer(*value);
  } else {
    out.literal("null");
  }
}

// `key` (`,"name":`, written out) and an integer, inside a one-line object.
template <size_t N, std::integral T>
void append_inline_integer(json_text::BufferedText& out, const char (&key)[N], T value) {
  out.literal(key);
  out.integer(value);
}

void append_breakdown(json_text::BufferedText& out, const TransferBreakdown& b) {
  append_inline_integer(out, "{\"control_messages\":", b.control_messages);
  append_inline_integer(out, ",\"control_ns\":", b.control_ns);
  append_inline_integer(out, ",\"queueing_ns\":", b.queueing_ns);
  append_inline_integer(out, ",\"wire_ns\":", b.wire_ns);
  append_inline_integer(out, ",\"copies_ns\":", b.copies_ns);
  append_inline_integer(out, ",\"other_ns\":", b.other_ns);
  out.character('}');
}

// One Recv's record on one line: transfer_json's fields, in its order.
void append_transfer(json_text::BufferedText& out, const TransferResult& t,
                     std::optional<int64_t> measured_ns) {
  out.literal("{\"phase\":");
  out.string(t.phase);
  out.literal(",\"name\":");
  out.string(t.name);
  append_inline_integer(out, ",\"src\":", t.src);
  append_inline_integer(out, ",\"dst\":", t.dst);
  append_inline_integer(out, ",\"bytes\":", t.bytes);
  append_inline_integer(out, ",\"recv_called_ns\":", t.recv_called_ns);
  out.literal(",\"done_ns\":");
  append_optional(out, t.done ? std::optional<TimeNs>(t.done_ns) : std::nullopt);
  out.literal(",\"latency_ns\":");
  append_optional(out, t.done ? std::optional<TimeNs>(t.done_ns - t.recv_called_ns) : std::nullopt);
  if (transfer_failed(t)) {
    out.literal(",\"failed\":true");
  } else {
    out.literal(",\"failed\":false");
  }
  if (measured_ns) append_inline_integer(out, ",\"measured_ns\":", *measured_ns);
  if (t.breakdown) {
    out.literal(",\"breakdown\":");
    append_breakdown(out, *t.breakdown);
  }
  out.character('}');
}

void append_per_tensor(std::string& out, const StepResult& step,
                       const std::vector<std::optional<int64_t>>& measured_transfer_ns) {
  if (step.transfers.empty()) {
    out += "[]";
    return;
  }
  out += '[';
  {
    // A record per line at json_text::kIndentedDepth, as append_element_start
    // starts it: a line break, then two spaces per level.
    static_assert(2 * (kPerTensorDepth + 1) == 8, "eight spaces below");
    json_text::BufferedText text(out);
    for (size_t i = 0; i < step.transfers.size(); ++i) {
      if (i == 0) {
        text.literal("\n        ");
      } else {
        text.literal(",\n        ");
      }
      append_transfer(text, step.transfers[i], measured_at(measured_transfer_ns, i));
    }
  }
  json_text::append_close(out, kPerTensorDepth, ']');
}

// One step: step_json's fields, in its order. wire_bytes: nullopt for a step
// that never finished.
void append_step(std::string& out, const StepResult& step, std::optional<uint64_t> wire_bytes,
                 std::optional<int64_t> measured_ns,
                 const std::vector<std::optional<int64_t>>& measured_transfer_ns) {
  const StepTotals totals = step_totals(step);
  auto member = [&out](std::string_view key) {
    json_text::append_member_start(out, key, kStepDepth, key == "step_id");
  };
  out += '{';
  member("step_id");
  json_text::append_integer(out, step.step_id);
  member("start_ns");
  json_text::append_integer(out, step.start_ns);
  member("end_ns");
  json_text::append_integer(out, step.end_ns);
  member("duration_ns");
  json_text::append_integer(out, step.end_ns - step.start_ns);
  member("transfers");
  json_text::append_integer(out, step.transfers.size());
  member("transfers_failed");
  json_text::append_integer(out, totals.failed);
  member("bytes");
  json_text::append_integer(out, totals.bytes);
  member("wire_bytes");
  append_optional(out, wire_bytes);
  member("max_recv_latency_ns");
  json_text::append_integer(out, totals.max_recv_latency_ns);
  member("finished");
  json_text::append_bool(out, wire_bytes.has_value());
  if (measured_ns) {
    member("measured_ns");
    json_text::append_integer(out, *measured_ns);
  }
  member("per_tensor");
  append_per_tensor(out, step, measured_transfer_ns);
  json_text::append_close(out, kStepDepth, '}');
}

void append_steps(std::string& out, const RunReport& report, const MeasuredWallTimes& measured) {
  const std::vector<StepResult>& steps = report.workload.steps;
  if (steps.empty()) {
    out += "[]";
    return;
  }
  const std::vector<std::optional<int64_t>> no_measured_transfers;
  out += '[';
  for (size_t i = 0; i < steps.size(); ++i) {
    json_text::append_element_start(out, kStepsDepth, i == 0);
    append_step(out, steps[i],
                i < report.step_wire_bytes.size() ? std::optional<uint64_t>(report.step_wire_bytes[i])
                                                  : std::nullopt,
                measured_at(measured.step_ns, i),
                i < measured.transfer_ns.size() ? measured.transfer_ns[i] : no_measured_transfers);
  }
  json_text::append_close(out, kStepsDepth, ']');
}

// An object of counters at depth 3 (a rank's "transport" or "protocol"): a
// member per line, or {} with none.
template <typename Fields>
void append_counter_object(std::string& out, const Fields& fields) {
  constexpr int kDepth = 3;
  if (fields.empty()) {
    out += "{}";
    return;
  }
  out += '{';
  bool first = true;
  for (const auto& [key, value] : fields) {
    json_text::append_member_start(out, key, kDepth, first);
    first = false;
    json_text::append_integer(out, value);
  }
  json_text::append_close(out, kDepth, '}');
}

// add_counters' per_rank, rank by rank.
void append_per_rank(std::string& out, const RunReport& report) {
  const size_t ranks = std::max(report.rank_stats.size(), report.protocol_counters.size());
  if (ranks == 0) {
    out += "[]";
    return;
  }
  const std::vector<std::pair<std::string_view, uint64_t>> none;
  out += '[';
  for (size_t r = 0; r < ranks; ++r) {
    json_text::append_element_start(out, 1, r == 0);
    out += '{';
    json_text::append_member_start(out, "rank", 2, true);
    json_text::append_integer(out, r);
    json_text::append_member_start(out, "transport", 2, false);
    if (r < report.rank_stats.size()) {
      append_counter_object(out, transport_fields(report.rank_stats[r]));
    } else {
      append_counter_object(out, none);
    }
    json_text::append_member_start(out, "protocol", 2, false);
    append_counter_object(
        out, r < report.protocol_counters.size() ? protocol_fields(report.protocol_counters[r]) : none);
    json_text::append_close(out, 2, '}');
  }
  json_text::append_close(out, 1, ']');
}

// add_time_account's resources: the busy ones, each a member per line.
void append_resources(std::string& out, const RunReport& report) {
  constexpr int kDepth = 2;
  out += '[';
  bool first = true;
  for (const ResourceUsage& u : report.resources) {
    if (u.busy_ns == 0) continue;  // as the tree: only the busy ones
    json_text::append_element_start(out, kDepth - 1, first);
    first = false;
    out += '{';
    json_text::append_member_start(out, "name", kDepth, true);
    json_text::append_string(out, u.name);
    json_text::append_member_start(out, "kind", kDepth, false);
    json_text::append_string(out, resource_kind_name(u.kind));
    json_text::append_member_start(out, "busy_ns", kDepth, false);
    json_text::append_integer(out, u.busy_ns);
    json_text::append_member_start(out, "bytes", kDepth, false);
    json_text::append_integer(out, u.bytes);
    json_text::append_member_start(out, "utilisation", kDepth, false);
    json_text::append_double(out, run_utilisation(u, report));
    json_text::append_close(out, kDepth, '}');
  }
  if (first) {
    out += ']';  // none busy: []
    return;
  }
  json_text::append_close(out, kDepth - 1, ']');
}

// Room for the whole text, so the string is not copied as it grows (a
// 256-node run writes about 25 MB; records run to about 300 bytes).
size_t estimated_text_bytes(const RunReport& report) {
  return 64 * 1024 + 400 * tensors_transferred(report) + 1024 * report.rank_stats.size() +
         160 * report.resources.size();
}

}  // namespace

std::string results_json_text(const RunReport& report, const MeasuredWallTimes& measured) {
  const Json document = results_document(report, measured, BulkParts::kPlaceholders);
  const bool steps_written = !report.collective_run();
  std::string out;
  out.reserve(estimated_text_bytes(report));
  out += '{';
  bool first = true;
  for (auto it = document.begin(); it != document.end(); ++it) {
    json_text::append_member_start(out, it.key(), 0, first);
    first = false;
    if (steps_written && it.key() == "steps") {
      append_steps(out, report, measured);
    } else if (it.key() == "per_rank") {
      append_per_rank(out, report);
    } else if (it.key() == "resources" && !report.resources.empty()) {
      append_resources(out, report);
    } else {
      json_text::append_layout(out, *it, 1);
    }
  }
  json_text::append_close(out, 0, '}');
  out += '\n';
  return out;
}

}  // namespace tensorwire::report
