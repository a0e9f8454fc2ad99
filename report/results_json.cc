#include "report/results_json.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "report/coverage_summary.h"
#include "report/results_json_parts.h"
#include "report/time_account.h"

namespace tensorwire::report {
namespace {

using Json = nlohmann::ordered_json;

Json transport_json(const TransportStats& s) {
  Json j = Json::object();
  for (const auto& [key, value] : transport_fields(s)) j[key] = value;
  return j;
}

Json protocol_json(const ProtocolCounters& counters) {
  Json j = Json::object();
  for (const auto& [key, value] : protocol_fields(counters)) j[key] = value;
  return j;
}

// Where a Recv's wait went; the parts sum to its latency_ns.
Json breakdown_json(const TransferBreakdown& b) {
  Json j;
  j["control_messages"] = b.control_messages;
  j["control_ns"] = b.control_ns;
  j["queueing_ns"] = b.queueing_ns;
  j["wire_ns"] = b.wire_ns;
  j["copies_ns"] = b.copies_ns;
  j["other_ns"] = b.other_ns;
  return j;
}

// One Recv. latency_ns is the time the caller waited (Recv call to done); both
// it and done_ns are null for a Recv that never completed.
Json transfer_json(const TransferResult& t, std::optional<int64_t> measured_ns) {
  Json j;
  j["phase"] = t.phase;
  j["name"] = t.name;
  j["src"] = t.src;
  j["dst"] = t.dst;
  j["bytes"] = t.bytes;
  j["recv_called_ns"] = t.recv_called_ns;
  j["done_ns"] = t.done ? Json(t.done_ns) : Json(nullptr);
  j["latency_ns"] = t.done ? Json(t.done_ns - t.recv_called_ns) : Json(nullptr);
  j["failed"] = transfer_failed(t);
  if (measured_ns) j["measured_ns"] = *measured_ns;
  if (t.breakdown) j["breakdown"] = breakdown_json(*t.breakdown);
  return j;
}

// wire_bytes: null for a step that never finished (its wire bytes were not
// taken); `finished` says the same in words.
Json step_json(const StepResult& step, const Json& wire_bytes, std::optional<int64_t> measured_ns,
               const std::vector<std::optional<int64_t>>& measured_transfer_ns) {
  const StepTotals totals = step_totals(step);
  Json j;
  j["step_id"] = step.step_id;
  j["start_ns"] = step.start_ns;
  j["end_ns"] = step.end_ns;
  j["duration_ns"] = step.end_ns - step.start_ns;
  j["transfers"] = step.transfers.size();
  j["transfers_failed"] = totals.failed;
  j["bytes"] = totals.bytes;
  j["wire_bytes"] = wire_bytes;
  j["max_recv_latency_ns"] = totals.max_recv_latency_ns;
  j["finished"] = !wire_bytes.is_null();
  if (measured_ns) j["measured_ns"] = *measured_ns;
  Json per_tensor = Json::array();
  for (size_t i = 0; i < step.transfers.size(); ++i) {
    per_tensor.push_back(transfer_json(step.transfers[i], measured_at(measured_transfer_ns, i)));
  }
  j["per_tensor"] = std::move(per_tensor);
  return j;
}

}  // namespace

bool transfer_failed(const TransferResult& t) { return !t.status.is_ok() || !t.mismatch.empty(); }

std::optional<int64_t> measured_at(const std::vector<std::optional<int64_t>>& times, size_t index) {
  return index < times.size() ? times[index] : std::nullopt;
}

StepTotals step_totals(const StepResult& step) {
  StepTotals totals;
  for (const TransferResult& t : step.transfers) {
    totals.bytes += t.bytes;
    if (transfer_failed(t)) ++totals.failed;
    totals.max_recv_latency_ns = std::max(totals.max_recv_latency_ns, t.done_ns - t.recv_called_ns);
  }
  return totals;
}

TransportFields transport_fields(const TransportStats& s) {
  return {{{"bytes_on_wire", s.bytes_on_wire_tx},
           {"sends", s.sends},
           {"rdma_writes", s.rdma_writes},
           {"rdma_writes_with_imm", s.rdma_writes_with_imm},
           {"rdma_reads", s.rdma_reads},
           {"registrations", s.registrations},
           {"registered_bytes", s.registered_bytes},
           {"deregistrations", s.deregistrations},
           {"cpu_copies", s.cpu_copies},
           {"cpu_copy_bytes", s.cpu_copy_bytes},
           {"copy_engine_copies", s.copy_engine_copies},
           {"copy_engine_bytes", s.copy_engine_bytes},
           {"rnr_retries", s.rnr_retries},
           {"completions_error", s.completions_error}}};
}

std::vector<std::pair<std::string_view, uint64_t>> protocol_fields(const ProtocolCounters& counters) {
  std::vector<std::pair<std::string_view, uint64_t>> fields;
  fields.reserve(counters.size() + 1);
  auto set = [&fields](std::string_view key, uint64_t value) {
    for (auto& field : fields) {
      if (field.first == key) {
        field.second = value;
        return;
      }
    }
    fields.emplace_back(key, value);
  };
  for (const ProtocolCounter& c : counters) set(c.name, c.value);
  set("control_messages", counter_total(counters, CounterRole::kControlMessage));
  return fields;
}

double run_utilisation(const ResourceUsage& u, const RunReport& report) {
  return report.end_ns > 0 ? static_cast<double>(u.busy_ns) / static_cast<double>(report.end_ns)
                           : 0.0;
}

uint64_t tensors_transferred(const RunReport& report) {
  uint64_t n = 0;
  for (const StepResult& s : report.workload.steps) n += s.transfers.size();
  return n;
}

ProtocolCounters total_protocol_counters(const RunReport& report) {
  ProtocolCounters t;
  for (const ProtocolCounters& c : report.protocol_counters) add_counters(t, c);
  return t;
}

uint64_t control_messages(const RunReport& report) {
  return counter_total(total_protocol_counters(report), CounterRole::kControlMessage);
}

double control_messages_per_tensor(const RunReport& report) {
  const uint64_t tensors = tensors_transferred(report);
  if (tensors == 0) return 0.0;
  return static_cast<double>(control_messages(report)) / static_cast<double>(tensors);
}

Json problem_json(const Problem& p) {
  Json j;
  j["kind"] = problem_kind_name(p.kind);
  j["rank"] = p.rank ? Json(*p.rank) : Json(nullptr);
  if (p.peer) j["peer"] = *p.peer;
  j["text"] = p.text;
  return j;
}

namespace {

// What every run has, whatever its workload.
void add_run_header(Json& j, const RunReport& report) {
  j["schema_version"] = kResultsSchemaVersion;
  j["backend"] = report.backend;
  j["scenario"] = Json{{"name", report.scenario_name}, {"path", report.scenario_path}};
  j["seed"] = report.seed;
  j["mode"] = report.payload ? "payload" : "timing";
  j["ranks"] = report.ranks;
  j["passed"] = report.passed();
  Json problems = Json::array();
  for (const Problem& p : report.problems) problems.push_back(problem_json(p));
  j["problems"] = std::move(problems);
  // The simulator's clock is simulated time; a real backend's is the wall.
  j[report.wall_time ? "wall_ns" : "end_ns"] = report.end_ns;
  j["events"] = report.events_processed;
}

// A point-to-point workload: its steps of tensors.
void add_point_to_point_results(Json& j, const RunReport& report,
                                const MeasuredWallTimes& measured, BulkParts bulk) {
  const WorkloadResult& w = report.workload;
  j["workload"] = Json{{"kind", report.workload_kind},
                       {"finished", w.finished},
                       {"steps", w.steps.size()},
                       {"tensors", tensors_transferred(report)},
                       {"recvs_failed", w.recvs_failed},
                       {"content_mismatches", w.content_mismatches},
                       {"recvs_completed_twice", w.recvs_completed_twice}};
  if (bulk == BulkParts::kPlaceholders) {
    j["steps"] = nullptr;
    return;
  }
  Json steps = Json::array();
  const std::vector<std::optional<int64_t>> no_measured_transfers;
  for (size_t i = 0; i < w.steps.size(); ++i) {
    steps.push_back(step_json(
        w.steps[i],
        i < report.step_wire_bytes.size() ? Json(report.step_wire_bytes[i]) : Json(nullptr),
        measured_at(measured.step_ns, i),
        i < measured.transfer_ns.size() ? measured.transfer_ns[i] : no_measured_transfers));
  }
  j["steps"] = std::move(steps);
}

// The transport's and the protocol's counters, in total and per rank.
void add_counters(Json& j, const RunReport& report, BulkParts bulk) {
  j["transport"] = transport_json(report.total_stats);
  Json p = Json{{"name", report.protocol}};
  p.update(protocol_json(total_protocol_counters(report)));
  if (!report.collective_run()) p["control_messages_per_tensor"] = control_messages_per_tensor(report);
  j["protocol"] = std::move(p);
  if (bulk == BulkParts::kPlaceholders) {
    j["per_rank"] = nullptr;
    return;
  }
  Json per_rank = Json::array();
  const size_t ranks = std::max(report.rank_stats.size(), report.protocol_counters.size());
  for (size_t r = 0; r < ranks; ++r) {
    Json rank;
    rank["rank"] = r;
    rank["transport"] = r < report.rank_stats.size() ? transport_json(report.rank_stats[r])
                                                     : Json::object();
    rank["protocol"] = r < report.protocol_counters.size()
                           ? protocol_json(report.protocol_counters[r])
                           : Json::object();
    per_rank.push_back(std::move(rank));
  }
  j["per_rank"] = std::move(per_rank);
}

// Where the time went, as flat numbers a sweep's row can carry (each key
// only when it was measured), then every busy resource.
void add_time_account(Json& j, const RunReport& report, BulkParts bulk) {
  if (const std::optional<TimeAccount> a = time_account(report)) {
    j["bottleneck"] = a->bottleneck.name;
    j["bottleneck_utilisation"] = a->bottleneck_utilisation;
    j["lower_bound_ns"] = a->lower_bound_ns;
    j["resource_bound_ns"] = a->resource_bound_ns;
    if (a->plan_bound) j["plan_bound_ns"] = a->plan_bound->bound_ns;
    j["achieved_ns"] = a->achieved_ns;
    j["efficiency"] = a->efficiency;
  }
  if (const std::optional<StepTimeSpread> spread = step_time_spread(report)) {
    j["step_time_p50_ns"] = spread->p50_ns;
    j["step_time_p99_ns"] = spread->p99_ns;
    j["step_time_max_ns"] = spread->max_ns;
  }
  if (!report.jitter.empty()) j["jitter"] = report.jitter;
  if (report.resources.empty()) return;
  if (bulk == BulkParts::kPlaceholders) {
    j["resources"] = nullptr;
    return;
  }
  Json resources = Json::array();
  for (const ResourceUsage& u : report.resources) {
    if (u.busy_ns == 0) continue;  // a cluster's idle parts would bury the busy ones
    resources.push_back(Json{{"name", u.name},
                             {"kind", resource_kind_name(u.kind)},
                             {"busy_ns", u.busy_ns},
                             {"bytes", u.bytes},
                             {"utilisation", run_utilisation(u, report)}});
  }
  j["resources"] = std::move(resources);
}

}  // namespace

Json results_document(const RunReport& report, const MeasuredWallTimes& measured,
                      BulkParts bulk) {
  Json j = Json::object();
  // A top-level key's pair holds a const string, so a reallocation copies
  // every member, the steps' whole tree too, rather than moving them: room for
  // all keys up front keeps that from happening.
  j.get_ref<Json::object_t&>().reserve(64);
  add_run_header(j, report);
  if (report.collective_run()) {
    // The protocol writes its own keys; one that could not plan has none.
    if (report.collective) report.collective->add_results(j, report.workload_kind);
  } else {
    add_point_to_point_results(j, report, measured, bulk);
  }
  add_counters(j, report, bulk);
  add_time_account(j, report, bulk);
  if (!report.coverage.empty()) j["coverage"] = coverage_json(report.coverage);
  return j;
}

Json results_json(const RunReport& report, const MeasuredWallTimes& measured) {
  return results_document(report, measured, BulkParts::kInTree);
}

}  // namespace tensorwire::report
