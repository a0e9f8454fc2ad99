// An execution recorded for a search that runs elsewhere: what a strategy
// was told and asked during one execution, so that a DporSearch in another
// thread can be fed it afterwards exactly as if it had steered the run.
//
// This is what lets `check --jobs N` run dfs on every core and still give the
// answer of one core: every execution is a pure function of its prefix (the
// choices replayed before the first ready event is taken at each new choice
// point), so a worker runs a prefix the search has queued, records it here,
// and the search consumes the records in its own order (parallel_check.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "backend_sim/scheduler.h"
#include "model/choice_strategy.h"

namespace tensorwire::model {

struct ExecutionLog {
  enum class Call : uint8_t { kChoose, kRan, kUsed, kNicWork };
  struct ChoicePoint {
    uint32_t first_ready = 0;  // into `ready`
    uint32_t ready_count = 0;
    uint32_t chosen = 0;
    std::optional<uint64_t> fingerprint;  // the state there, where it was computed
  };
  std::vector<Call> calls;  // in order; each takes the next entry of its list
  std::vector<ChoicePoint> choice_points;
  std::vector<sim::ReadyEvent> ready;  // every choice point's ready events, one after another
  std::vector<sim::ReadyEvent> ran;
  std::vector<sim::SharedObject> used;
  std::vector<std::pair<uint32_t, uint32_t>> nic_work;  // (rank, peer)
};

// Whether the search will probably have seen a state by the time it takes
// this execution: a worker stops computing fingerprints past it, where the
// search will most likely cut anyway. Where it guessed wrong the search finds
// fingerprints missing (log_has_fingerprints_to_cut) and runs the execution
// again with every one.
using SeenBefore = std::function<bool(uint64_t fingerprint)>;

// Follows `prefix`, then takes the first ready event at every choice point,
// recording everything into a log. Asks for the state's fingerprint at each
// choice point past the prefix until one the search has seen, at a point
// where it may cut (`exact`: only the first choice point of an instant; see
// DporSearch::cache_states).
class ExecutionRecorder final : public ChoiceStrategy {
 public:
  ExecutionRecorder(std::vector<uint32_t> prefix, bool exact, SeenBefore seen_before);
  uint32_t choose(std::span<const sim::ReadyEvent> ready, uint64_t step) override;
  void ran(const sim::ReadyEvent& event) override;
  void used(const sim::SharedObject& object) override;
  void nic_work_on_send_queue(uint32_t rank, uint32_t peer) override;

  void set_fingerprint(std::function<uint64_t()> fingerprint) { fingerprint_ = std::move(fingerprint); }
  ExecutionLog take_log() { return std::move(log_); }

 private:
  std::vector<uint32_t> prefix_;
  bool exact_;
  SeenBefore seen_before_;
  std::function<uint64_t()> fingerprint_;
  bool fingerprinting_ = true;  // false past a state the search has seen
  bool any_ran_ = false;
  int64_t last_ran_at_ns_ = 0;
  ExecutionLog log_;
};

// Whether the log holds every fingerprint a DporSearch that has seen `seen`
// will ask for: it asks at each choice point past the first `prefix` ones
// until it cuts at a state it has seen (before or earlier in this execution)
// where it may cut (DporSearch::cache_states).
bool log_has_fingerprints_to_cut(const ExecutionLog& log, size_t prefix, bool exact,
                                 const std::function<bool(uint64_t)>& seen);

// Tells `strategy` everything the log recorded, in order, as the run did,
// with `on_choice_point(i)` called before each choice point i is asked (to
// hand the strategy that point's fingerprint). Throws std::logic_error when
// the strategy chooses otherwise than the recorded run did.
void feed_execution_log(const ExecutionLog& log, ChoiceStrategy& strategy,
                        const std::function<void(const ExecutionLog::ChoicePoint&)>& on_choice_point);

}  // namespace tensorwire::model
