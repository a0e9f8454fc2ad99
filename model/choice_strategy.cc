#include "model/choice_strategy.h"

#include <algorithm>

namespace tensorwire::model {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [0, n) without modulo bias worth mentioning for n << 2^64.
uint64_t below(uint64_t& state, uint64_t n) { return n == 0 ? 0 : splitmix64(state) % n; }

}  // namespace

uint32_t RandomWalkStrategy::choose(std::span<const sim::ReadyEvent> ready, uint64_t) {
  return static_cast<uint32_t>(below(state_, ready.size()));
}

PctStrategy::PctStrategy(uint64_t seed, uint32_t ranks, uint32_t depth, uint64_t expected_steps) {
  uint64_t state = seed;
  // Initial priorities depth .. depth + ranks - 1, in a random order: above
  // every value a change point assigns (depth - 1 .. 1).
  priority_.resize(ranks);
  for (uint32_t r = 0; r < ranks; ++r) priority_[r] = depth + r;
  for (uint32_t r = ranks; r > 1; --r) std::swap(priority_[r - 1], priority_[below(state, r)]);
  for (uint32_t i = 1; i < depth; ++i) change_points_.push_back(below(state, std::max<uint64_t>(expected_steps, 1)));
  std::sort(change_points_.begin(), change_points_.end());
}

uint32_t PctStrategy::choose(std::span<const sim::ReadyEvent> ready, uint64_t step) {
  auto priority_of = [this](uint32_t rank) {
    return rank < priority_.size() ? priority_[rank] : int64_t{0};
  };
  uint32_t best = 0;
  for (uint32_t i = 1; i < ready.size(); ++i) {
    if (priority_of(ready[i].rank) > priority_of(ready[best].rank)) best = i;
  }
  // A change point: the rank about to run drops below every other rank.
  for (size_t j = 0; j < change_points_.size(); ++j) {
    if (change_points_[j] == step && ready[best].rank < priority_.size()) {
      priority_[ready[best].rank] = static_cast<int64_t>(change_points_.size() - j);
    }
  }
  return best;
}

uint32_t ReplayStrategy::choose(std::span<const sim::ReadyEvent> ready, uint64_t step) {
  if (step >= choices_.size() || choices_[step] >= ready.size()) {
    diverged_ = true;
    return 0;
  }
  return choices_[step];
}

size_t RecordingScheduler::pick(std::span<const sim::ReadyEvent> ready) {
  const uint64_t step = choices_.size();
  const bool fault_open = faults_.enabled && !fault_done_;
  const uint32_t n = static_cast<uint32_t>(ready.size());
  uint32_t choice = 0;
  if (fault_open && faults_.forced_at >= 0) {
    choice = static_cast<int64_t>(step) == faults_.forced_at ? n : strategy_.choose(ready, step);
  } else if (fault_open) {
    options_.assign(ready.begin(), ready.end());
    options_.push_back({0, UINT32_MAX, kFaultEventKind});
    choice = strategy_.choose(options_, step);
  } else {
    choice = strategy_.choose(ready, step);
  }
  const uint32_t width = fault_open ? n + 1 : n;
  if (choice >= width) choice = 0;
  choices_.push_back(choice);
  widths_.push_back(width);
  if (choice == n) {  // the fault: the first ready event runs, then the fault
    fault_done_ = true;
    fault_pending_ = true;
    return 0;
  }
  return choice;
}

bool RecordingScheduler::take_pending_fault() {
  const bool pending = fault_pending_;
  fault_pending_ = false;
  return pending;
}

}  // namespace tensorwire::model
