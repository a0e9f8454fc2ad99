#include "core/problem.h"

#include <ostream>
#include <utility>

#include "core/assert.h"

namespace tensorwire {

std::string_view problem_kind_name(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::kSafety: return "safety";
    case ProblemKind::kLiveness: return "liveness";
    case ProblemKind::kBadInput: return "bad_input";
    case ProblemKind::kTransport: return "transport";
  }
  TW_UNREACHABLE("unknown problem kind");
}

std::optional<ProblemKind> problem_kind_named(std::string_view name) {
  for (ProblemKind kind : kProblemKinds) {
    if (problem_kind_name(kind) == name) return kind;
  }
  return std::nullopt;
}

Problem safety_problem(std::string text, std::optional<RankId> rank) {
  return Problem{ProblemKind::kSafety, rank, std::nullopt, std::move(text)};
}

Problem liveness_problem(std::string text, std::optional<RankId> rank) {
  return Problem{ProblemKind::kLiveness, rank, std::nullopt, std::move(text)};
}

Problem bad_input_problem(std::string text) {
  return Problem{ProblemKind::kBadInput, std::nullopt, std::nullopt, std::move(text)};
}

Problem transport_problem(std::string text, std::optional<RankId> rank,
                          std::optional<RankId> peer) {
  return Problem{ProblemKind::kTransport, rank, peer, std::move(text)};
}

Problem status_problem(std::string text, const Status& status, std::optional<RankId> rank,
                       std::optional<RankId> peer) {
  TW_ASSERT_MSG(!status.is_ok(), "a problem needs a failure");
  const ProblemKind kind = status.code() == StatusCode::kResourceLimit ? ProblemKind::kBadInput
                                                                       : ProblemKind::kTransport;
  return Problem{kind, rank, peer, std::move(text)};
}

std::string problem_line(const Problem& problem) {
  TW_ASSERT(!problem.text.empty());
  return std::string(problem_kind_name(problem.kind)) + ": " + problem.text;
}

std::ostream& operator<<(std::ostream& out, const Problem& problem) {
  return out << problem_line(problem);
}

std::string problem_lines(const std::vector<Problem>& problems) {
  std::string out;
  for (const Problem& p : problems) out += problem_line(p) + "\n";
  return out;
}

bool any_problem_mentions(const std::vector<Problem>& problems, std::string_view words) {
  for (const Problem& p : problems) {
    if (p.text.find(words) != std::string::npos) return true;
  }
  return false;
}

}  // namespace tensorwire
