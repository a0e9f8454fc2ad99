#include "runner/rank_outcome.h"

#include <algorithm>
#include <exception>
#include <map>

#include <nlohmann/json.hpp>

namespace tensorwire {
namespace {

using Json = nlohmann::json;

constexpr int kMaxStatusCode = static_cast<int>(StatusCode::kInternal);

// A peer's counters are outside input: bounded in number and name length.
constexpr size_t kMaxProtocolCounters = 256;
constexpr size_t kMaxCounterNameBytes = 64;

struct TransportField {
  const char* name;
  uint64_t TransportStats::*field;
};
constexpr TransportField kTransportFields[] = {
    {"bytes_on_wire_tx", &TransportStats::bytes_on_wire_tx},
    {"sends", &TransportStats::sends},
    {"rdma_writes", &TransportStats::rdma_writes},
    {"rdma_writes_with_imm", &TransportStats::rdma_writes_with_imm},
    {"rdma_reads", &TransportStats::rdma_reads},
    {"registrations", &TransportStats::registrations},
    {"registered_bytes", &TransportStats::registered_bytes},
    {"deregistrations", &TransportStats::deregistrations},
    {"cpu_copy_bytes", &TransportStats::cpu_copy_bytes},
    {"cpu_copies", &TransportStats::cpu_copies},
    {"copy_engine_bytes", &TransportStats::copy_engine_bytes},
    {"copy_engine_copies", &TransportStats::copy_engine_copies},
    {"rnr_retries", &TransportStats::rnr_retries},
    {"completions_error", &TransportStats::completions_error},
};

Json transfer_to_json(size_t index, const TransferResult& t) {
  return Json{{"index", index},
              {"step_id", t.step_id},
              {"phase", t.phase},
              {"name", t.name},
              {"src", t.src},
              {"dst", t.dst},
              {"bytes", t.bytes},
              {"recv_called_ns", t.recv_called_ns},
              {"done_ns", t.done_ns},
              {"done", t.done},
              {"code", static_cast<int>(t.status.code())},
              {"message", t.status.message()},
              {"verified", t.verified},
              {"mismatch", t.mismatch}};
}

// Readers that throw on a wrong type or range; decode turns that into a Status.
uint64_t u64(const Json& j, const char* key) { return j.at(key).get<uint64_t>(); }
int64_t i64(const Json& j, const char* key) { return j.at(key).get<int64_t>(); }
std::string str(const Json& j, const char* key) { return j.at(key).get<std::string>(); }
bool boolean(const Json& j, const char* key) { return j.at(key).get<bool>(); }

struct DecodeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// [kind, text] from a peer: the kind must be one we know, the text a line.
Problem problem_from_json(const Json& j, RankId rank) {
  if (!j.is_array() || j.size() != 2 || !j[0].is_string() || !j[1].is_string()) {
    throw DecodeError("a problem is not [kind, text]");
  }
  const std::optional<ProblemKind> kind = problem_kind_named(j[0].get<std::string>());
  if (!kind) throw DecodeError("a problem of unknown kind '" + j[0].get<std::string>() + "'");
  if (j[1].get<std::string>().empty()) throw DecodeError("a problem with no text");
  return Problem{*kind, rank, std::nullopt, j[1].get<std::string>()};
}

TransferResult transfer_from_json(const Json& j) {
  TransferResult t;
  t.step_id = u64(j, "step_id");
  t.phase = str(j, "phase");
  t.name = str(j, "name");
  t.src = j.at("src").get<RankId>();
  t.dst = j.at("dst").get<RankId>();
  t.bytes = u64(j, "bytes");
  t.recv_called_ns = i64(j, "recv_called_ns");
  t.done_ns = i64(j, "done_ns");
  t.done = boolean(j, "done");
  const int code = j.at("code").get<int>();
  if (code < 0 || code > kMaxStatusCode) throw DecodeError("status code " + std::to_string(code));
  const std::string message = str(j, "message");
  if (code != 0) t.status = Status(static_cast<StatusCode>(code), message);
  t.verified = boolean(j, "verified");
  t.mismatch = str(j, "mismatch");
  return t;
}

}  // namespace

RankOutcome rank_outcome_of(RankId rank, const WorkloadResult& result,
                            const std::vector<uint64_t>& step_wire_bytes) {
  RankOutcome o;
  o.rank = rank;
  o.finished = result.finished;
  o.recvs_completed_twice = result.recvs_completed_twice;
  for (size_t i = 0; i < result.steps.size(); ++i) {
    const StepResult& s = result.steps[i];
    RankStepOutcome so;
    so.step_id = s.step_id;
    so.start_ns = s.start_ns;
    so.end_ns = s.end_ns;
    so.finished = i < step_wire_bytes.size();
    so.wire_bytes = so.finished ? step_wire_bytes[i] : 0;
    for (size_t j = 0; j < s.transfers.size(); ++j) {
      if (s.transfers[j].dst == rank) so.recvs.emplace_back(j, s.transfers[j]);
    }
    o.steps.push_back(std::move(so));
  }
  return o;
}

namespace {

Status decode_counters(const Json& protocol, const std::string& who, ProtocolCounters& out) {
  if (!protocol.is_array() || protocol.size() > kMaxProtocolCounters) {
    return Status(StatusCode::kMalformedMessage,
                  who + ": 'protocol' is not a list of at most 256 counters");
  }
  for (const Json& c : protocol) {
    ProtocolCounter counter;
    const bool shaped = c.is_array() && c.size() == 3 && c[0].is_string() && c[1].is_string() &&
                        c[2].is_number_unsigned();
    if (!shaped || c[0].get_ref<const std::string&>().empty() ||
        c[0].get_ref<const std::string&>().size() > kMaxCounterNameBytes ||
        !counter_role_from_name(c[1].get_ref<const std::string&>(), counter.role)) {
      return Status(StatusCode::kMalformedMessage,
                    who + ": a protocol counter is not [name, role, value]: " +
                        c.dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 120));
    }
    counter.name = c[0].get<std::string>();
    counter.value = c[2].get<uint64_t>();
    out.push_back(std::move(counter));
  }
  return Status::ok();
}

}  // namespace

std::string encode_rank_outcome(const RankOutcome& o) {
  Json j;
  j["rank"] = o.rank;
  j["finished"] = o.finished;
  j["stop_reason"] = o.stop_reason;
  j["recvs_completed_twice"] = o.recvs_completed_twice;
  Json steps = Json::array();
  for (const RankStepOutcome& s : o.steps) {
    Json recvs = Json::array();
    for (const auto& [index, t] : s.recvs) recvs.push_back(transfer_to_json(index, t));
    steps.push_back(Json{{"step_id", s.step_id},
                         {"start_ns", s.start_ns},
                         {"end_ns", s.end_ns},
                         {"finished", s.finished},
                         {"wire_bytes", s.wire_bytes},
                         {"recvs", std::move(recvs)}});
  }
  j["steps"] = std::move(steps);
  // [name, role, value], in the protocol's order.
  Json protocol = Json::array();
  for (const ProtocolCounter& c : o.protocol) {
    protocol.push_back(Json::array({c.name, counter_role_name(c.role), c.value}));
  }
  j["protocol"] = std::move(protocol);
  Json transport;
  for (const TransportField& f : kTransportFields) transport[f.name] = o.transport.*(f.field);
  j["transport"] = std::move(transport);
  // [kind, text]: the rank is the outcome's.
  Json problems = Json::array();
  for (const Problem& p : o.problems) {
    problems.push_back(Json::array({problem_kind_name(p.kind), p.text}));
  }
  j["problems"] = std::move(problems);
  // [track, name, start_ns, duration_ns or -1 for an instant, detail]
  Json trace = Json::array();
  for (const TraceEvent& e : o.trace) {
    trace.push_back(Json::array({e.track, e.name, e.start_ns, e.instant ? -1 : e.duration_ns,
                                 e.detail}));
  }
  j["trace"] = std::move(trace);
  j["trace_clock"] = Json{{"domain", o.trace_clock.domain},
                          {"origin_ns", o.trace_clock.origin_ns},
                          {"aligned_at_ns", o.trace_clock.aligned_at_ns}};
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<RankOutcome> decode_rank_outcome(std::string_view text, RankId expected_rank) {
  const std::string who = "rank " + std::to_string(expected_rank) + "'s results";
  try {
    const Json j = Json::parse(text);
    RankOutcome o;
    o.rank = j.at("rank").get<RankId>();
    if (o.rank != expected_rank) {
      return Status(StatusCode::kMalformedMessage,
                    who + " say they are rank " + std::to_string(o.rank) + "'s");
    }
    o.finished = boolean(j, "finished");
    o.stop_reason = str(j, "stop_reason");
    o.recvs_completed_twice = u64(j, "recvs_completed_twice");
    for (const Json& s : j.at("steps")) {
      RankStepOutcome so;
      so.step_id = u64(s, "step_id");
      so.start_ns = i64(s, "start_ns");
      so.end_ns = i64(s, "end_ns");
      so.finished = boolean(s, "finished");
      so.wire_bytes = u64(s, "wire_bytes");
      for (const Json& t : s.at("recvs")) {
        so.recvs.emplace_back(t.at("index").get<size_t>(),
                              transfer_from_json(t));
      }
      o.steps.push_back(std::move(so));
    }
    if (Status st = decode_counters(j.at("protocol"), who, o.protocol); !st.is_ok()) return st;
    const Json& transport = j.at("transport");
    for (const TransportField& f : kTransportFields) o.transport.*(f.field) = u64(transport, f.name);
    for (const Json& p : j.at("problems")) o.problems.push_back(problem_from_json(p, o.rank));
    for (const Json& e : j.at("trace")) {
      if (!e.is_array() || e.size() != 5) {
        throw DecodeError("a trace event is not [track, name, start_ns, duration_ns, detail]");
      }
      TraceEvent event;
      event.track = e[0].get<std::string>();
      event.name = e[1].get<std::string>();
      event.start_ns = e[2].get<int64_t>();
      const int64_t duration = e[3].get<int64_t>();
      if (duration < -1) {
        throw DecodeError("a trace event lasts " + std::to_string(duration) + " ns");
      }
      event.instant = duration == -1;
      event.duration_ns = event.instant ? 0 : duration;
      event.detail = e[4].get<std::string>();
      o.trace.push_back(std::move(event));
    }
    const Json& clock = j.at("trace_clock");
    o.trace_clock.domain = str(clock, "domain");
    o.trace_clock.origin_ns = i64(clock, "origin_ns");
    o.trace_clock.aligned_at_ns = i64(clock, "aligned_at_ns");
    return o;
  } catch (const std::exception& e) {
    return Status(StatusCode::kMalformedMessage, who + " are malformed: " + e.what());
  }
}

namespace {

namespace {

// `text` as one of rank `rank`'s problems: "rank R: text", the prefix once
// even where the rank's own message already starts with it.
std::string with_rank_prefix(RankId rank, const std::string& text) {
  const std::string prefix = "rank " + std::to_string(rank) + ": ";
  return text.rfind(prefix, 0) == 0 ? text : prefix + text;
}

}  // namespace

// What every rank's part says about the run as a whole: finished or not,
// the counters, and each rank's own problems.
void merge_rank_totals(const std::vector<RankOutcome>& parts, MergedRun& m) {
  m.workload.finished = true;
  for (const RankOutcome& p : parts) {
    m.workload.finished = m.workload.finished && p.finished;
    m.workload.recvs_completed_twice += p.recvs_completed_twice;
    m.rank_stats.push_back(p.transport);
    m.protocol_counters.push_back(p.protocol);
    if (!p.finished) {
      m.problems.push_back(liveness_problem(
          "rank " + std::to_string(p.rank) + ": the workload did not finish" +
              (p.stop_reason.empty() ? std::string() : ": " + p.stop_reason),
          p.rank));
    }
    for (const Problem& own : p.problems) {
      Problem q = own;
      q.rank = p.rank;
      q.text = with_rank_prefix(p.rank, own.text);
      m.problems.push_back(std::move(q));
    }
  }
}

// Step i as the parts report it: its transfers by index in the step (each
// from the rank that is its dst), whether every rank finished it, and the
// payload bytes they posted in it.
struct GatheredStep {
  std::map<size_t, TransferResult> by_index;
  bool finished_everywhere = false;
  uint64_t wire_bytes = 0;
};

GatheredStep gather_step(const std::vector<RankOutcome>& parts, size_t i,
                         std::vector<Problem>& problems) {
  const RankOutcome& first = parts.front();
  const RankStepOutcome& base = first.steps[i];
  GatheredStep g;
  g.finished_everywhere = base.finished;
  for (const RankOutcome& p : parts) {
    if (i >= p.steps.size()) {
      g.finished_everywhere = false;
      continue;
    }
    const RankStepOutcome& s = p.steps[i];
    g.finished_everywhere = g.finished_everywhere && s.finished;
    g.wire_bytes += s.wire_bytes;
    if (s.step_id != base.step_id) {
      problems.push_back(bad_input_problem("rank " + std::to_string(p.rank) + " played step " +
                                           std::to_string(s.step_id) + " where rank " +
                                           std::to_string(first.rank) + " played step " +
                                           std::to_string(base.step_id)));
      continue;
    }
    for (const auto& [index, t] : s.recvs) {
      if (t.dst != p.rank || !g.by_index.emplace(index, t).second) {
        problems.push_back(bad_input_problem(
            "rank " + std::to_string(p.rank) + " reported transfer " + std::to_string(index) +
            " of step " + std::to_string(base.step_id) + " that is not its to report"));
      }
    }
  }
  return g;
}

// The transfers in index order. Indices must run 0..n-1 when every rank
// reported (`complete`): a gap is a transfer no rank reported.
std::vector<TransferResult> transfers_in_order(std::map<size_t, TransferResult>& by_index,
                                               bool complete, uint64_t step_id,
                                               std::vector<Problem>& problems) {
  std::vector<TransferResult> transfers;
  size_t expected = 0;
  for (auto& [index, t] : by_index) {
    if (complete && index != expected) {
      problems.push_back(bad_input_problem("step " + std::to_string(step_id) +
                                           ": no rank reported transfer " +
                                           std::to_string(expected)));
    }
    expected = index + 1;
    transfers.push_back(std::move(t));
  }
  return transfers;
}

void merge_step(const std::vector<RankOutcome>& parts, size_t i, bool complete, MergedRun& m) {
  const RankStepOutcome& base = parts.front().steps[i];
  StepResult step;
  step.step_id = base.step_id;
  step.start_ns = base.start_ns;
  step.end_ns = base.end_ns;
  GatheredStep gathered = gather_step(parts, i, m.problems);
  step.transfers = transfers_in_order(gathered.by_index, complete, base.step_id, m.problems);
  std::vector<std::optional<int64_t>> measured;
  for (const TransferResult& t : step.transfers) {
    if (!t.status.is_ok()) ++m.workload.recvs_failed;
    if (!t.mismatch.empty()) ++m.workload.content_mismatches;
    measured.push_back(t.done ? std::optional<int64_t>(t.done_ns - t.recv_called_ns)
                              : std::nullopt);
  }
  m.measured_transfer_ns.push_back(std::move(measured));
  m.measured_step_ns.push_back(gathered.finished_everywhere
                                   ? std::optional<int64_t>(base.end_ns - base.start_ns)
                                   : std::nullopt);
  if (gathered.finished_everywhere) m.step_wire_bytes.push_back(gathered.wire_bytes);
  m.workload.steps.push_back(std::move(step));
}

}  // namespace

MergedRun merge_rank_outcomes(const std::vector<RankOutcome>& parts, bool complete) {
  MergedRun m;
  if (parts.empty()) return m;
  merge_rank_totals(parts, m);
  for (size_t i = 0; i < parts.front().steps.size(); ++i) merge_step(parts, i, complete, m);
  return m;
}

std::string merge_rank_traces(const std::vector<RankOutcome>& parts, TraceSink& sink) {
  bool one_domain = !parts.empty() && !parts.front().trace_clock.domain.empty();
  for (const RankOutcome& p : parts) {
    one_domain = one_domain && p.trace_clock.domain == parts.front().trace_clock.domain;
  }
  // A rank's time t is t + shift on the common line, before moving 0.
  const auto shift = [one_domain](const RankOutcome& p) {
    return one_domain ? p.trace_clock.origin_ns : -p.trace_clock.aligned_at_ns;
  };
  std::optional<TimeNs> earliest;
  for (const RankOutcome& p : parts) {
    for (const TraceEvent& e : p.trace) {
      const TimeNs t = e.start_ns + shift(p);
      if (!earliest || t < *earliest) earliest = t;
    }
  }
  for (const RankOutcome& p : parts) {
    replay_trace_events(p.trace, shift(p) - earliest.value_or(0), sink);
  }
  return one_domain ? "the ranks' clocks are one host's CLOCK_MONOTONIC; 0 is the earliest event"
                    : "each rank's clock is aligned where it left the set-up barrier; 0 is the "
                      "earliest event";
}

}  // namespace tensorwire
