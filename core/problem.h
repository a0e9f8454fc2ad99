// What a run found wrong, as a value with a kind: the model checker, the
// summary and the results JSON decide from the kind, never from the words.
//   safety     something that must never happen did (wrong bytes, a broken
//              invariant, a Recv completed twice)
//   liveness   something that must eventually happen did not (work left
//              pending, a Recv that never completed, a rank gone idle unfinished)
//   bad_input  the run could not be set up as described (a plan that cannot be
//              made, memory that cannot be had)
//   transport  the transport reported an error to the protocol (a failed Recv,
//              a failed start): a violation unless an injected fault explains it
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/nic.h"
#include "core/status.h"

namespace tensorwire {

enum class ProblemKind : uint8_t { kSafety, kLiveness, kBadInput, kTransport };

inline constexpr std::array<ProblemKind, 4> kProblemKinds = {
    ProblemKind::kSafety, ProblemKind::kLiveness, ProblemKind::kBadInput, ProblemKind::kTransport};

// "safety", "liveness", "bad_input", "transport".
std::string_view problem_kind_name(ProblemKind kind);
std::optional<ProblemKind> problem_kind_named(std::string_view name);

struct Problem {
  ProblemKind kind = ProblemKind::kSafety;
  std::optional<RankId> rank;  // the rank it happened at, where one did
  std::optional<RankId> peer;  // the other end, for a problem between two ranks
  std::string text;            // one line for people; it names what and where

  friend bool operator==(const Problem&, const Problem&) = default;
};

Problem safety_problem(std::string text, std::optional<RankId> rank = {});
Problem liveness_problem(std::string text, std::optional<RankId> rank = {});
Problem bad_input_problem(std::string text);
Problem transport_problem(std::string text, std::optional<RankId> rank = {},
                          std::optional<RankId> peer = {});

// A failure status as a problem: bad input when it is a limit of the harness
// (kResourceLimit: the scenario is too big for this run, which says nothing
// about the protocol), a transport problem otherwise.
Problem status_problem(std::string text, const Status& status, std::optional<RankId> rank = {},
                       std::optional<RankId> peer = {});

// "liveness: the simulator went idle with the workload unfinished (step 3)".
std::string problem_line(const Problem& problem);
// The line, for test failure messages (gtest prints values through it).
std::ostream& operator<<(std::ostream& out, const Problem& problem);
// Each problem's line, each followed by a newline.
std::string problem_lines(const std::vector<Problem>& problems);
// Does any problem's text contain `words`? (For tests and tools that look for
// one finding; verdicts come from kinds.)
bool any_problem_mentions(const std::vector<Problem>& problems, std::string_view words);

}  // namespace tensorwire
