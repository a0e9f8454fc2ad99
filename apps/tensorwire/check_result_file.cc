#include "apps/tensorwire/check_result_file.h"

#include <charconv>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "scenario/text_file.h"

namespace tensorwire::app {
namespace {

constexpr const char* kFormat = "tensorwire check result";
constexpr int kVersion = 1;

nlohmann::ordered_json transitions_json(const std::vector<TransitionTable>& tables) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const TransitionTable& t : tables) {
    nlohmann::ordered_json states = nlohmann::ordered_json::array(), allowed = states, taken = states;
    for (size_t from = 0; from < t.state_count(); ++from) {
      states.push_back(t.state_name(from));
      for (size_t to = 0; to < t.state_count(); ++to) {
        if (!t.allowed(from, to)) continue;
        allowed.push_back({from, to});
        if (t.taken(from, to) > 0) taken.push_back({from, to, t.taken(from, to)});
      }
    }
    out.push_back({{"machine", t.machine()}, {"states", states}, {"allowed", allowed}, {"taken", taken}});
  }
  return out;
}

std::vector<TransitionTable> transitions_of(const nlohmann::json& j) {
  std::vector<TransitionTable> tables;
  for (const nlohmann::json& t : j) {
    TransitionTable table(t.at("machine").get<std::string>(), t.at("states").get<std::vector<std::string>>());
    for (const nlohmann::json& a : t.at("allowed")) table.allow(a.at(0).get<size_t>(), a.at(1).get<size_t>());
    for (const nlohmann::json& c : t.at("taken")) {
      const size_t from = c.at(0).get<size_t>(), to = c.at(1).get<size_t>();
      if (!table.allowed(from, to)) throw std::runtime_error("a taken transition is not allowed");
      table.count(from, to, c.at(2).get<uint64_t>());
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

nlohmann::ordered_json coverage_of(const Coverage& coverage) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const CoverageGroup& g : coverage.groups()) {
    nlohmann::ordered_json items = nlohmann::ordered_json::array();
    for (const CoverageItem& i : g.items) items.push_back({{"name", i.name}, {"count", i.count}});
    out.push_back({{"group", g.name}, {"items", items}});
  }
  return out;
}

Coverage coverage_from(const nlohmann::json& j) {
  Coverage coverage;
  for (const nlohmann::json& g : j) {
    const std::string group = g.at("group").get<std::string>();
    for (const nlohmann::json& i : g.at("items")) {
      const std::string item = i.at("name").get<std::string>();
      coverage.declare(group, item);
      if (const uint64_t n = i.at("count").get<uint64_t>(); n > 0) coverage.count(group, item, n);
    }
  }
  return coverage;
}

std::string hex(uint64_t v) {
  char buf[17];
  auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
  return std::string(buf, r.ptr);
}

model::CheckOutcome outcome_named(const std::string& name) {
  for (auto o : {model::CheckOutcome::kNothingFound, model::CheckOutcome::kSafety,
                 model::CheckOutcome::kLiveness, model::CheckOutcome::kBadInput}) {
    if (name == model::check_outcome_name(o)) return o;
  }
  throw std::runtime_error("unknown outcome '" + name + "'");
}

}  // namespace

std::string check_result_json(const CheckResultFile& r) {
  const model::CheckReport& c = r.report;
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["search"] = r.search;
  j["scenario"] = {{"path", r.scenario_path}, {"name", r.scenario_name}, {"hash", hex(r.scenario_hash)}};
  j["protocol"] = r.protocol;
  j["strategy"] = r.strategy;
  j["exact"] = r.exact;
  j["shard"] = {{"index", r.shard_index}, {"count", r.shard_count}};
  j["seconds"] = r.seconds;
  j["outcome"] = model::check_outcome_name(c.outcome);
  j["schedules"] = c.schedules;
  j["choice_points"] = c.choice_points;
  j["events"] = c.events;
  j["distinct_states"] = c.distinct_states;
  j["cached_schedules"] = c.cached_schedules;
  j["exhausted"] = c.exhausted;
  j["states"] = c.states;
  j["transitions"] = transitions_json(c.transitions);
  j["coverage"] = coverage_of(c.coverage);
  j["counterexample"] = r.counterexample_schedule.empty()
                            ? nlohmann::ordered_json(nullptr)
                            : nlohmann::ordered_json{{"schedule", r.counterexample_schedule},
                                                     {"problems", r.counterexample_problems}};
  return j.dump(1) + "\n";
}

namespace {

CheckResultFile result_of(const nlohmann::json& j) {
  if (j.at("format") != kFormat || j.at("version") != kVersion) {
    throw std::runtime_error(std::string("not a \"") + kFormat + "\" file of version 1");
  }
  CheckResultFile r;
  r.search = j.at("search").get<std::string>();
  r.scenario_path = j.at("scenario").at("path").get<std::string>();
  r.scenario_name = j.at("scenario").at("name").get<std::string>();
  r.scenario_hash = std::stoull(j.at("scenario").at("hash").get<std::string>(), nullptr, 16);
  r.protocol = j.at("protocol").get<std::string>();
  r.strategy = j.at("strategy").get<std::string>();
  r.exact = j.at("exact").get<bool>();
  r.shard_index = j.at("shard").at("index").get<uint32_t>();
  r.shard_count = j.at("shard").at("count").get<uint32_t>();
  r.seconds = j.at("seconds").get<double>();
  model::CheckReport& c = r.report;
  c.outcome = outcome_named(j.at("outcome").get<std::string>());
  c.schedules = j.at("schedules").get<uint64_t>();
  c.choice_points = j.at("choice_points").get<uint64_t>();
  c.events = j.at("events").get<uint64_t>();
  c.distinct_states = j.at("distinct_states").get<uint64_t>();
  c.cached_schedules = j.at("cached_schedules").get<uint64_t>();
  c.exhausted = j.at("exhausted").get<bool>();
  c.states = j.at("states").get<std::vector<uint64_t>>();
  c.transitions = transitions_of(j.at("transitions"));
  c.coverage = coverage_from(j.at("coverage"));
  if (const nlohmann::json& ce = j.at("counterexample"); !ce.is_null()) {
    r.counterexample_schedule = ce.at("schedule").get<std::string>();
    r.counterexample_problems = ce.at("problems").get<std::vector<std::string>>();
  }
  if (r.shard_count == 0 || r.shard_index >= r.shard_count) {
    throw std::runtime_error("shard index not below the shard count");
  }
  return r;
}

}  // namespace

Result<CheckResultFile> read_check_result(const std::string& path) {
  Result<std::string> text = read_text_file(path);
  if (!text) return Status(StatusCode::kInvalidArgument, text.status().message());
  try {
    return result_of(nlohmann::json::parse(*text));
  } catch (const std::exception& e) {
    return Status(StatusCode::kInvalidArgument, "'" + path + "' is not a check result file: " + e.what());
  }
}

}  // namespace tensorwire::app
