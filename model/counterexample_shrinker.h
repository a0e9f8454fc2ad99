// Counterexample shrinking: after the checker finds a failing execution,
// search for a smaller schedule that breaks the same check, so that the
// counterexample a person reads is short. Smaller means, in this order: fewer
// events run, fewer deviations from the default order (nonzero choices; a
// fault is a deviation too), fewer faults injected, fewer choice points.
//
// The search edits the schedule and replays it: a choice past the end of the
// schedule, or one out of range where an edit changed what was ready, is the
// default 0; the execution an edit leads to is what counts, and its actual
// choices become the schedule edited next. Techniques: truncation (keep only
// the first k deviations, binary search on k), then delta debugging (ddmin)
// over the set of deviating positions, setting chunks of them to 0; a fault
// choice set to 0 is a fault dropped. Every replay counts against a budget,
// so the search always ends quickly; it is deterministic.
//
// Generic over the choice encoding: it never interprets a choice beyond "0 is
// the default"; the faults are those the execution says struck.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

#include "model/choice_strategy.h"
#include "model/explorer.h"
#include "scenario/scenario.h"

namespace tensorwire::model {

// The size of a counterexample; compares in the order the shrinker
// minimises it (the order of the fields).
struct ScheduleSize {
  uint64_t events = 0;
  uint64_t deviations = 0;     // nonzero choices
  uint64_t faults = 0;         // faults injected
  uint64_t choice_points = 0;  // the schedule's length

  friend auto operator<=>(const ScheduleSize&, const ScheduleSize&) = default;
};

// The check an execution broke: its first problem no injected fault excuses,
// as "KIND: TEXT" with every number (decimal, or hex after "0x") replaced by
// '#'. So a shrunk schedule may break the check at another address, wr id,
// step or rank, but not another check: the text names which check it is (the
// DMA sanitizer's kind of race, which invariant, "wrong bytes", a hang) and
// the tensor's name. Empty when no problem is left unexcused.
std::string violated_check(const Execution& execution);

struct ShrinkOptions {
  uint64_t max_replays = 400;  // executions the search may run, the first replay included
};

struct ShrinkResult {
  // The smallest failing execution found: same outcome, same violated_check.
  // Its `choices` replay it exactly (ReplayStrategy, no divergence). The
  // original when nothing smaller was found, or when it did not reproduce.
  Execution execution;
  ScheduleSize size;
  ScheduleSize original_size;
  std::string check;       // violated_check of both
  uint64_t replays = 0;    // executions run, at most max_replays
  bool reproduced = true;  // false: replaying the original broke another check (nothing shrunk)
};

// `scenario` is model_scenario()'d; `seed` and `faults` are those `failing`
// ran with (faults are always offered at every choice point here, as a
// replay does: forced_at is ignored).
ShrinkResult shrink_counterexample(const Scenario& scenario, uint64_t seed, FaultOffer faults,
                                   const Execution& failing, const ShrinkOptions& options = {});

}  // namespace tensorwire::model
