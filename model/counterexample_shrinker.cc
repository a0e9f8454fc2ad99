#include "model/counterexample_shrinker.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "backend_sim/scheduler.h"
#include "core/assert.h"
#include "core/trace_sink.h"

namespace tensorwire::model {
namespace {

// Follows an edited schedule: past its end, or where a choice is out of range
// (an edit changed what is ready), it picks the default 0.
class LenientReplay final : public ChoiceStrategy {
 public:
  explicit LenientReplay(const std::vector<uint32_t>& choices) : choices_(choices) {}
  uint32_t choose(std::span<const sim::ReadyEvent> ready, uint64_t step) override {
    return step < choices_.size() && choices_[step] < ready.size() ? choices_[step] : 0;
  }

 private:
  const std::vector<uint32_t>& choices_;
};

std::vector<size_t> deviation_positions(const std::vector<uint32_t>& choices) {
  std::vector<size_t> out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] != 0) out.push_back(i);
  }
  return out;
}

ScheduleSize size_of(const Execution& e) {
  return {e.events, deviation_positions(e.choices).size(), e.faults_injected, e.choices.size()};
}

// "0x1f" and "31" alike become '#'.
std::string without_numbers(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const bool hex = text.compare(i, 2, "0x") == 0 && i + 2 < text.size() &&
                     std::isxdigit(static_cast<unsigned char>(text[i + 2]));
    if (!hex && !std::isdigit(static_cast<unsigned char>(text[i]))) {
      out += text[i++];
      continue;
    }
    i += hex ? 2 : 0;
    while (i < text.size()) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (!(hex ? std::isxdigit(c) : std::isdigit(c))) break;
      ++i;
    }
    out += '#';
  }
  return out;
}

struct Candidate {
  Execution execution;
  ScheduleSize size;
};

// The search's state: the smallest failing execution so far, and the budget.
class Shrinker {
 public:
  Shrinker(const Scenario& scenario, uint64_t seed, FaultOffer faults, uint64_t max_replays)
      : scenario_(scenario), seed_(seed), faults_(std::move(faults)), max_replays_(max_replays) {
    faults_.forced.clear();  // offered everywhere, as a replay does
  }

  // Replays the original; false when it does not break a check (then there
  // is nothing to shrink towards).
  bool start(const Execution& failing) {
    outcome_ = failing.outcome;
    check_ = violated_check(failing);
    std::optional<Candidate> first = run(failing.choices);
    if (!first) return false;
    current_ = std::move(*first);
    return true;
  }

  // Keeps only the first k deviations (the schedule cut after the k-th):
  // k = 0 first (many bugs need no deviation at all: one replay says so),
  // then the smallest k a binary search finds.
  void truncate() {
    size_t lo = 0;  // fewer deviations than lo were tried and did not fail the same way
    bool first = true;
    while (budget_left()) {
      const std::vector<size_t> devs = deviation_positions(current_.execution.choices);
      if (lo >= devs.size()) return;
      const size_t keep = first ? 0 : (lo + devs.size()) / 2;
      first = false;
      std::vector<uint32_t> cut = current_.execution.choices;
      cut.resize(keep == 0 ? 0 : devs[keep - 1] + 1);
      if (!try_accept(cut)) lo = keep + 1;
    }
  }

  // Delta debugging over the deviating positions: keep only one chunk of
  // them, or set one chunk to the default, at finer and finer granularity,
  // until no single deviation can go.
  void ddmin() {
    size_t chunks = 2;
    while (budget_left()) {
      const std::vector<size_t> devs = deviation_positions(current_.execution.choices);
      if (devs.empty()) return;
      chunks = std::min(chunks, devs.size());
      if (reduce_once(devs, chunks)) {
        chunks = std::max<size_t>(chunks - 1, 2);
        continue;
      }
      if (chunks >= devs.size()) return;
      chunks = std::min(chunks * 2, devs.size());
    }
  }

  const Candidate& current() const { return current_; }
  uint64_t replays() const { return replays_; }
  const std::string& check() const { return check_; }

 private:
  bool budget_left() const { return replays_ < max_replays_; }

  // One round of ddmin at `chunks` chunks: true when a candidate was taken.
  bool reduce_once(const std::vector<size_t>& devs, size_t chunks) {
    for (const bool keep_only : {true, false}) {
      // With two chunks, keeping one is setting the other to the default;
      // past four, a small chunk alone rarely fails and the tries cost more
      // than they find (measured on the zoo's bugs in the shipped scenarios).
      if (keep_only && (chunks <= 2 || chunks > 4)) continue;
      for (size_t c = 0; c < chunks && budget_left(); ++c) {
        const size_t begin = c * devs.size() / chunks;
        const size_t end = (c + 1) * devs.size() / chunks;
        std::vector<uint32_t> edited = current_.execution.choices;
        for (size_t i = 0; i < devs.size(); ++i) {
          const bool in_chunk = i >= begin && i < end;
          if (in_chunk != keep_only) edited[devs[i]] = 0;
        }
        if (try_accept(edited)) return true;
      }
    }
    return false;
  }

  // Runs `choices`: the execution when it breaks the same check with the
  // same outcome.
  std::optional<Candidate> run(const std::vector<uint32_t>& choices) {
    TW_ASSERT(budget_left());
    ++replays_;
    LenientReplay replay(choices);
    NullTraceSink none;
    Candidate c;
    c.execution = run_execution(scenario_, seed_, replay, none, nullptr, faults_);
    if (c.execution.outcome != outcome_ || violated_check(c.execution) != check_) return std::nullopt;
    c.size = size_of(c.execution);
    return c;
  }

  // Runs `choices` and takes the execution when it fails the same way and is
  // smaller than the current one.
  bool try_accept(const std::vector<uint32_t>& choices) {
    if (!budget_left()) return false;
    std::optional<Candidate> c = run(choices);
    if (!c || !(c->size < current_.size)) return false;
    current_ = std::move(*c);
    return true;
  }

  const Scenario& scenario_;
  uint64_t seed_;
  FaultOffer faults_;
  uint64_t max_replays_;
  uint64_t replays_ = 0;
  CheckOutcome outcome_ = CheckOutcome::kNothingFound;
  std::string check_;
  Candidate current_;
};

}  // namespace

std::string violated_check(const Execution& execution) {
  for (const Problem& p : execution.problems) {
    if (std::find(execution.excused.begin(), execution.excused.end(), p) != execution.excused.end()) {
      continue;
    }
    return std::string(problem_kind_name(p.kind)) + ": " + without_numbers(p.text);
  }
  return "";
}

ShrinkResult shrink_counterexample(const Scenario& scenario, uint64_t seed, FaultOffer faults,
                                   const Execution& failing, const ShrinkOptions& options) {
  ShrinkResult result;
  result.execution = failing;
  result.original_size = size_of(failing);
  result.size = result.original_size;
  result.check = violated_check(failing);
  if (options.max_replays == 0 || result.check.empty()) return result;
  Shrinker shrinker(scenario, seed, std::move(faults), options.max_replays);
  if (!shrinker.start(failing)) {
    result.reproduced = false;
    result.replays = shrinker.replays();
    return result;
  }
  result.original_size = shrinker.current().size;
  // Each pass leaves ddmin's 1-minimal schedule; a taken candidate's actual
  // choices can open new edits, so go again while a pass shrank anything.
  ScheduleSize before;
  do {
    before = shrinker.current().size;
    shrinker.truncate();
    shrinker.ddmin();
  } while (shrinker.current().size < before && shrinker.replays() < options.max_replays);
  result.execution = shrinker.current().execution;
  result.size = shrinker.current().size;
  result.replays = shrinker.replays();
  return result;
}

}  // namespace tensorwire::model
