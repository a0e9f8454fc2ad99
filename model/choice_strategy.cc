#include "model/choice_strategy.h"

#include <algorithm>

#include "core/splitmix64.h"

namespace tensorwire::model {
namespace {

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
  used_ = std::max<size_t>(used_, step + 1);
  if (step >= choices_.size() || choices_[step] >= ready.size()) {
    diverged_ = true;
    return 0;
  }
  return choices_[step];
}

const char* fault_kind_name(FaultKind kind) {
  switch (kind) {
    case FaultKind::kQpError: return "qp_error";
    case FaultKind::kRegistrationFailure: return "reg_fail";
    case FaultKind::kCrash: return "crash";
  }
  return "?";
}

bool parse_fault_list(std::string_view text, std::vector<FaultKind>& out) {
  out.clear();
  if (text == "none") return true;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view name = text.substr(0, comma);
    FaultKind kind;
    if (name == fault_kind_name(FaultKind::kQpError)) {
      kind = FaultKind::kQpError;
    } else if (name == fault_kind_name(FaultKind::kRegistrationFailure)) {
      kind = FaultKind::kRegistrationFailure;
    } else if (name == fault_kind_name(FaultKind::kCrash)) {
      kind = FaultKind::kCrash;
    } else {
      return false;
    }
    if (std::find(out.begin(), out.end(), kind) != out.end()) return false;  // named twice
    out.push_back(kind);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return false;  // a trailing comma
  }
  return !out.empty();
}

std::string fault_list_text(const std::vector<FaultKind>& kinds) {
  if (kinds.empty()) return "none";
  std::string out;
  for (FaultKind k : kinds) out += (out.empty() ? "" : ",") + std::string(fault_kind_name(k));
  return out;
}

size_t RecordingScheduler::pick(std::span<const sim::ReadyEvent> ready) {
  const uint64_t step = choices_.size();
  const bool fault_open = faults_.enabled() && !fault_done_;
  const uint32_t n = static_cast<uint32_t>(ready.size());
  const uint32_t extra = fault_open ? static_cast<uint32_t>(faults_.kinds.size()) : 0;
  uint32_t choice = 0;
  if (fault_open && faults_.forced_at >= 0) {
    // The strategy is asked either way, so its own plan (PCT's change points)
    // stays in step.
    choice = strategy_.choose(ready, step);
    if (static_cast<int64_t>(step) == faults_.forced_at) {
      choice = n + std::min<uint32_t>(faults_.forced_kind, extra - 1);
    }
  } else if (fault_open) {
    options_.assign(ready.begin(), ready.end());
    for (FaultKind k : faults_.kinds) options_.push_back({0, UINT32_MAX, fault_kind_name(k)});
    choice = strategy_.choose(options_, step);
  } else {
    choice = strategy_.choose(ready, step);
  }
  const uint32_t width = n + extra;
  if (choice >= width) choice = 0;
  choices_.push_back(choice);
  widths_.push_back(width);
  if (choice >= n) {  // a fault: it strikes now, then the queue asks again
    fault_done_ = true;
    const InjectedFault fault{faults_.kinds[choice - n], ready[0].rank};
    struck_ = fault;
    strategy_.ran(sim::ReadyEvent{sim::Scheduler::kInjectedSequence, UINT32_MAX,
                                  fault_kind_name(fault.kind), 0, ready[0].at_ns});
    if (fault_handler_) fault_handler_(fault);
    return kGatherAgain;
  }
  return choice;
}

}  // namespace tensorwire::model
