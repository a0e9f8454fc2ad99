#include "core/protocols/realm_broadcast/broadcast_rank_part.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/assert.h"

namespace tensorwire::collectives {
namespace {

using Json = nlohmann::json;

// A peer's part is outside input: its lists are bounded before anything is kept.
constexpr size_t kMaxCounters = 256;
constexpr size_t kMaxProblems = 4096;
constexpr size_t kMaxTextBytes = 4096;

struct DecodeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void require(bool holds, const std::string& what) {
  if (!holds) throw DecodeError(what);
}

Json times_to_json(const std::map<uint32_t, TimeNs>& times) {
  Json j = Json::array();
  for (const auto& [id, ns] : times) j.push_back(Json::array({id, ns}));
  return j;
}

std::map<uint32_t, TimeNs> times_from_json(const Json& j, size_t bound, const char* what) {
  require(j.is_array() && j.size() <= bound, std::string("'") + what + "' is not a list of at most " +
                                                 std::to_string(bound) + " [id, ns] pairs");
  std::map<uint32_t, TimeNs> out;
  for (const Json& e : j) {
    require(e.is_array() && e.size() == 2 && e[0].is_number_unsigned() && e[1].is_number_integer(),
            std::string("an entry of '") + what + "' is not [id, ns]");
    const uint64_t id = e[0].get<uint64_t>();
    require(id < bound, std::string("'") + what + "' names id " + std::to_string(id) +
                            ", past the plan's " + std::to_string(bound));
    require(out.emplace(static_cast<uint32_t>(id), e[1].get<TimeNs>()).second,
            std::string("'") + what + "' names id " + std::to_string(id) + " twice");
  }
  return out;
}

template <size_t N>
void counts_from_json(const Json& j, std::array<uint64_t, N>& out, const char* what) {
  require(j.is_array() && j.size() == N, std::string("'") + what + "' is not a list of " +
                                             std::to_string(N) + " counts");
  for (size_t i = 0; i < N; ++i) {
    require(j[i].is_number_unsigned(), std::string("a count of '") + what + "' is not a count");
    out[i] = j[i].get<uint64_t>();
  }
}

ProtocolCounters counters_from_json(const Json& j) {
  require(j.is_array() && j.size() <= kMaxCounters, "'counters' is not a list of at most " +
                                                        std::to_string(kMaxCounters) + " counters");
  ProtocolCounters out;
  for (const Json& c : j) {
    require(c.is_array() && c.size() == 3 && c[0].is_string() && c[1].is_string() &&
                c[2].is_number_unsigned(),
            "a counter is not [name, role, value]");
    ProtocolCounter counter{c[0].get<std::string>(), CounterRole::kOther, c[2].get<uint64_t>()};
    require(!counter.name.empty() && counter.name.size() <= kMaxTextBytes, "a counter's name is empty or too long");
    require(counter_role_from_name(c[1].get<std::string>(), counter.role),
            "counter '" + counter.name + "' has an unknown role");
    out.push_back(std::move(counter));
  }
  return out;
}

std::vector<Problem> problems_from_json(const Json& j, RankId rank) {
  require(j.is_array() && j.size() <= kMaxProblems, "'problems' is not a list of at most " +
                                                        std::to_string(kMaxProblems) + " problems");
  std::vector<Problem> out;
  for (const Json& p : j) {
    require(p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_string(),
            "a problem is not [kind, text]");
    const std::optional<ProblemKind> kind = problem_kind_named(p[0].get<std::string>());
    require(kind.has_value(), "a problem of unknown kind '" + p[0].get<std::string>() + "'");
    const std::string text = p[1].get<std::string>();
    require(!text.empty() && text.size() <= kMaxTextBytes, "a problem's text is empty or too long");
    out.push_back(Problem{*kind, rank, std::nullopt, text});
  }
  return out;
}

}  // namespace

std::string encode_broadcast_rank_part(const BroadcastRankPart& part) {
  // A part its peers would refuse is this rank's bug, not theirs.
  TW_ASSERT_MSG(part.counters.size() <= kMaxCounters && part.problems.size() <= kMaxProblems,
                "a rank's part holds no more than a peer accepts");
  Json j;
  j["rank"] = part.rank;
  Json counters = Json::array();
  for (const ProtocolCounter& c : part.counters) {
    counters.push_back(Json::array({c.name, counter_role_name(c.role), c.value}));
  }
  j["counters"] = std::move(counters);
  Json problems = Json::array();
  for (const Problem& p : part.problems) {
    problems.push_back(Json::array({problem_kind_name(p.kind), p.text}));
  }
  j["problems"] = std::move(problems);
  j["destination_done_ns"] = times_to_json(part.destination_done_ns);
  j["copy_first_busy_ns"] = times_to_json(part.copy_first_busy_ns);
  j["sent"] = part.coverage.sent;
  j["received"] = part.coverage.received;
  j["paths"] = part.coverage.paths;
  return j.dump();
}

Result<BroadcastRankPart> decode_broadcast_rank_part(std::string_view text, RankId expected_rank,
                                                     size_t buffers, size_t copies) {
  const std::string who = "rank " + std::to_string(expected_rank) + "'s part of the broadcast";
  try {
    const Json j = Json::parse(text);
    require(j.is_object(), "not a JSON object");
    BroadcastRankPart part;
    require(j.at("rank").is_number_unsigned() && j.at("rank").get<uint64_t>() == expected_rank,
            "it says it is another rank's");
    part.rank = expected_rank;
    part.counters = counters_from_json(j.at("counters"));
    part.problems = problems_from_json(j.at("problems"), expected_rank);
    part.destination_done_ns = times_from_json(j.at("destination_done_ns"), buffers, "destination_done_ns");
    part.copy_first_busy_ns = times_from_json(j.at("copy_first_busy_ns"), copies, "copy_first_busy_ns");
    counts_from_json(j.at("sent"), part.coverage.sent, "sent");
    counts_from_json(j.at("received"), part.coverage.received, "received");
    counts_from_json(j.at("paths"), part.coverage.paths, "paths");
    return part;
  } catch (const std::exception& e) {
    return Status(StatusCode::kInvalidArgument, who + " is malformed: " + e.what());
  }
}

}  // namespace tensorwire::collectives
