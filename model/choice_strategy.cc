#include "model/choice_strategy.h"

#include <algorithm>

#include "core/assert.h"
#include "core/splitmix64.h"

namespace tensorwire::model {
namespace {

// Uniform in [0, n) without modulo bias worth mentioning for n << 2^64.
uint64_t below(uint64_t& state, uint64_t n) { return n == 0 ? 0 : splitmix64(state) % n; }

}  // namespace

uint32_t RandomWalkStrategy::choose(std::span<const sim::ReadyEvent> ready, uint64_t) {
  return static_cast<uint32_t>(below(state_, ready.size()));
}

PctStrategy::PctStrategy(uint64_t seed, uint32_t depth, uint64_t steps_expected)
    : seed_(seed), depth_(std::max<uint32_t>(depth, 1)) {
  uint64_t state = seed;
  const uint64_t k = std::max<uint64_t>(steps_expected, 1);
  // d - 1 distinct points in [1, k]; all of them when k is smaller.
  const uint64_t wanted = std::min<uint64_t>(depth_ - 1, k);
  while (change_points_.size() < wanted) {
    const uint64_t point = 1 + below(state, k);
    if (std::find(change_points_.begin(), change_points_.end(), point) == change_points_.end()) {
      change_points_.push_back(point);
    }
  }
}

uint64_t PctStrategy::agent_of(const sim::ReadyEvent& event) {
  // FNV-1a over the kind's characters (not its address: the same kind names
  // the same agent in every run), then the rank.
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char* c = event.kind; c != nullptr && *c != '\0'; ++c) {
    h = (h ^ static_cast<uint8_t>(*c)) * 0x100000001b3ull;
  }
  uint64_t state = h ^ (static_cast<uint64_t>(event.rank) << 32);
  return splitmix64(state);
}

int64_t PctStrategy::priority_of(const sim::ReadyEvent& event) {
  if (event.rank == UINT32_MAX) return 0;  // an offered fault: below every agent
  const uint64_t agent = agent_of(event);
  for (const auto& [a, p] : priority_) {
    if (a == agent) return p;
  }
  // Above every priority a change point gives (1 .. depth - 1); the order
  // among agents is uniformly random, and the same for a seed however the
  // agents are met. 62 random bits: equal draws are as good as impossible
  // (and would fall back to the older event).
  uint64_t state = seed_ ^ agent;
  const int64_t p = static_cast<int64_t>(depth_) + static_cast<int64_t>(splitmix64(state) >> 2);
  priority_.emplace_back(agent, p);
  return p;
}

uint32_t PctStrategy::choose(std::span<const sim::ReadyEvent> ready, uint64_t) {
  // The highest-priority agent runs; its oldest ready event first (an agent
  // runs its own events in order).
  uint32_t best = 0;
  int64_t best_priority = priority_of(ready[0]);
  for (uint32_t i = 1; i < ready.size(); ++i) {
    const int64_t p = priority_of(ready[i]);
    if (p > best_priority || (p == best_priority && ready[i].sequence < ready[best].sequence)) {
      best = i;
      best_priority = p;
    }
  }
  return best;
}

void PctStrategy::ran(const sim::ReadyEvent& event) {
  if (event.rank == UINT32_MAX) return;  // an injected fault: no agent's step
  priority_of(event);                    // n counts agents that ran alone too
  ++steps_;
  const uint64_t agent = agent_of(event);
  for (size_t i = 0; i < change_points_.size(); ++i) {
    if (change_points_[i] != steps_) continue;
    for (auto& [a, p] : priority_) {
      if (a == agent) p = static_cast<int64_t>(i + 1);
    }
    ++changes_;
  }
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
    case FaultKind::kTimeout: return "timeout";
    case FaultKind::kStepAbort: return "abort";
  }
  return "?";
}

namespace {

constexpr FaultKind kFaultKinds[] = {FaultKind::kQpError, FaultKind::kRegistrationFailure,
                                     FaultKind::kCrash, FaultKind::kTimeout, FaultKind::kStepAbort};

std::optional<FaultKind> fault_kind_from_name(std::string_view name) {
  for (FaultKind k : kFaultKinds) {
    if (name == fault_kind_name(k)) return k;
  }
  return std::nullopt;
}

}  // namespace

bool parse_fault_list(std::string_view text, std::vector<FaultKind>& out) {
  out.clear();
  if (text == "none") return true;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view name = text.substr(0, comma);
    const std::optional<FaultKind> kind = fault_kind_from_name(name);
    if (!kind) return false;
    if (std::find(out.begin(), out.end(), *kind) != out.end()) return false;  // named twice
    out.push_back(*kind);
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

uint64_t RecordingScheduler::fault_state() const {
  uint64_t state = 0;
  for (const InjectedFault& f : struck_) {
    // A QP error always breaks the queue pair between ranks 0 and 1, and a
    // timeout fires the earliest pending one whoever ran first: which rank's
    // event was first where they struck does not matter.
    const bool rank_free = f.kind == FaultKind::kQpError || f.kind == FaultKind::kTimeout;
    const uint64_t rank = rank_free ? 0 : f.rank;
    state = state * 0x100000001b3ull + 1 + static_cast<uint64_t>(f.kind) * 7 + rank * 131;
  }
  return state;
}

void RecordingScheduler::gather_offered(uint32_t rank) {
  offered_.clear();
  if (!faults_open()) return;
  for (FaultKind k : faults_.kinds) {
    if (!applies_ || applies_(k, rank)) offered_.push_back(k);
  }
}

std::optional<uint32_t> RecordingScheduler::forced_choice(uint64_t step, uint32_t ready_count) {
  if (next_forced_ >= faults_.forced.size()) return std::nullopt;
  const ForcedFault& f = faults_.forced[next_forced_];
  if (step < f.at) return std::nullopt;
  TW_ASSERT_MSG(f.kind < faults_.kinds.size(), "a forced fault of a kind on offer");
  const auto it = std::find(offered_.begin(), offered_.end(), faults_.kinds[f.kind]);
  if (it == offered_.end()) return std::nullopt;  // cannot strike here: at the next point it can
  ++next_forced_;
  return ready_count + static_cast<uint32_t>(it - offered_.begin());
}

size_t RecordingScheduler::pick(std::span<const sim::ReadyEvent> ready) {
  TW_ASSERT(!ready.empty());
  const uint64_t step = choices_.size();
  const uint32_t n = static_cast<uint32_t>(ready.size());
  gather_offered(ready[0].rank);
  const uint32_t extra = static_cast<uint32_t>(offered_.size());
  uint32_t choice = 0;
  if (!faults_.forced.empty()) {
    // The strategy is asked either way, so its own plan (PCT's change points)
    // stays in step.
    choice = strategy_.choose(ready, step);
    if (std::optional<uint32_t> forced = forced_choice(step, n)) choice = *forced;
  } else if (extra > 0) {
    options_.assign(ready.begin(), ready.end());
    for (FaultKind k : offered_) options_.push_back({0, UINT32_MAX, fault_kind_name(k)});
    choice = strategy_.choose(options_, step);
  } else {
    choice = strategy_.choose(ready, step);
  }
  const uint32_t width = n + extra;
  if (choice >= width) choice = 0;
  choices_.push_back(choice);
  widths_.push_back(width);
  if (choice < n) return choice;
  // A fault: it strikes now, then the queue asks again.
  const InjectedFault fault{offered_[choice - n], ready[0].rank};
  struck_.push_back(fault);
  strategy_.ran(sim::ReadyEvent{sim::Scheduler::kInjectedSequence, UINT32_MAX,
                                fault_kind_name(fault.kind), 0, ready[0].at_ns});
  if (fault_handler_) fault_handler_(fault);
  return kGatherAgain;
}

}  // namespace tensorwire::model
