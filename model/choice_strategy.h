// Who decides the order of events that are ready at the same simulated time.
// The model checker runs a scenario many times, each time with a strategy
// that picks differently; what it picked is recorded as a schedule, which a
// ReplayStrategy follows to rerun the same execution exactly.
#pragma once

#include <functional>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend_sim/scheduler.h"

namespace tensorwire::model {

class ChoiceStrategy {
 public:
  virtual ~ChoiceStrategy() = default;
  // An index into `ready` (at least two events). `step` counts choice points
  // from 0 in this execution.
  virtual uint32_t choose(std::span<const sim::ReadyEvent> ready, uint64_t step) = 0;
  // Every event, chosen or alone, just before it runs, and what it shares
  // with others while it runs (see sim::Scheduler): what a
  // partial-order reduction needs to know which events were independent.
  virtual void ran(const sim::ReadyEvent& /*event*/) {}
  virtual void used(const sim::SharedObject& /*object*/) {}
  // The kinds used() acts on (sim::Scheduler::used_kinds): every kind unless
  // the strategy says otherwise.
  virtual uint32_t used_kinds() const { return sim::Scheduler::kEveryKind; }
  virtual void nic_work_on_send_queue(uint32_t /*rank*/, uint32_t /*peer*/) {}
};

// Uniformly at random, from a seed (its own splitmix64: the standard
// library's distributions differ between implementations).
class RandomWalkStrategy final : public ChoiceStrategy {
 public:
  explicit RandomWalkStrategy(uint64_t seed) : state_(seed) {}
  uint32_t choose(std::span<const sim::ReadyEvent> ready, uint64_t step) override;
  uint32_t used_kinds() const override { return 0; }

 private:
  uint64_t state_;
};

// PCT as published (Burckhardt et al., ASPLOS 2010, "A randomized scheduler
// with probabilistic guarantees of finding bugs"), over the simulator's
// agents instead of threads. An agent is what runs its own events in order:
// a rank's CPU (its timers), its copy engine, its NIC's posts, transfers,
// arrivals, completions, RNR retries (see agent_of). Every agent gets a
// random priority above depth - 1 when first seen (drawn from the seed and
// the agent, so the order of discovery does not matter); d - 1 distinct
// change points k_1..k_{d-1} are drawn uniformly from [1, k], k the steps
// (events run) an execution is expected to take; when the event of step k_i
// has run, its agent's priority drops to i. At every choice point the
// highest-priority agent runs its oldest ready event. A bug of depth d is
// found with probability at least 1 / (n * k^(d-1)) per execution, n agents.
//
// k counts steps, every event run, not choice points: a change point at a
// step where one event was ready still reorders later ones (its agent waits
// from then on), and the guarantee is proved over steps. Fault steps (rank
// UINT32_MAX, see RecordingScheduler) are not counted: they belong to no
// agent and are placed by the fault offer.
class PctStrategy final : public ChoiceStrategy {
 public:
  // `steps_expected`: k, measured by the caller over earlier executions.
  PctStrategy(uint64_t seed, uint32_t depth, uint64_t steps_expected);
  uint32_t choose(std::span<const sim::ReadyEvent> ready, uint64_t step) override;
  void ran(const sim::ReadyEvent& event) override;
  uint32_t used_kinds() const override { return 0; }

  // Which agent an event belongs to: its rank and its kind ("timer" is the
  // rank's CPU, "timeout" its timeouts, "copy" its copy engine, "post",
  // "transfer", "arrival", "completion", "rnr retry" its NIC's parts). The send queues of one rank
  // to several peers are one agent: ReadyEvent does not name the peer.
  static uint64_t agent_of(const sim::ReadyEvent& event);

  uint64_t steps() const { return steps_; }             // events run so far, faults not counted
  size_t agents() const { return priority_.size(); }    // distinct agents seen so far
  uint32_t priority_changes() const { return changes_; }  // change points reached so far
  // Step numbers (from 1), in draw order: reaching the i-th (from 0) sets priority i + 1.
  const std::vector<uint64_t>& change_points() const { return change_points_; }

 private:
  int64_t priority_of(const sim::ReadyEvent& event);

  uint64_t seed_;
  uint32_t depth_;
  std::vector<std::pair<uint64_t, int64_t>> priority_;  // (agent, priority), in order first seen
  std::vector<uint64_t> change_points_;
  uint64_t steps_ = 0;
  uint32_t changes_ = 0;
};

// Follows a recorded schedule. Past its end, or where a recorded choice is out
// of range (the execution diverged), it picks 0 and remembers that it did.
class ReplayStrategy final : public ChoiceStrategy {
 public:
  explicit ReplayStrategy(std::vector<uint32_t> choices) : choices_(std::move(choices)) {}
  uint32_t choose(std::span<const sim::ReadyEvent> ready, uint64_t step) override;
  // Also true when the execution ended before using every recorded choice.
  bool diverged() const { return diverged_ || used_ < choices_.size(); }

 private:
  std::vector<uint32_t> choices_;
  bool diverged_ = false;
  size_t used_ = 0;
};

// Whether an execution may inject faults (up to FaultOffer::max_faults), and
// how the points are chosen: offered to the strategy as more alternatives at
// every choice point (dfs, replay), or forced at choice points drawn in
// advance (random walks and PCT, which would otherwise inject at once).
enum class FaultKind : uint8_t {
  kQpError,              // the queue pair between ranks 0 and 1 goes to error
  kRegistrationFailure,  // the next memory registration of the rank of the first ready event fails
  kCrash,                // the rank of the first ready event dies: its queue pairs fail, it runs no more
  kTimeout,              // the earliest pending timeout (a timer due later) fires now
  kStepAbort,            // the application aborts its current step on the rank of the first ready event
};
// "qp_error", "reg_fail", "crash", "timeout", "abort"
const char* fault_kind_name(FaultKind kind);
// "none", or kinds separated by commas ("qp_error,reg_fail"); false when a
// name is unknown.
bool parse_fault_list(std::string_view text, std::vector<FaultKind>& out);
std::string fault_list_text(const std::vector<FaultKind>& kinds);  // "none" when empty

// A fault a random walk or PCT injects: kinds[kind] at the first choice point
// at or after `at` where that kind can strike.
struct ForcedFault {
  uint64_t at = 0;
  uint32_t kind = 0;
};

struct FaultOffer {
  std::vector<FaultKind> kinds;  // empty: no fault
  uint32_t max_faults = 1;       // per execution
  // Empty: every kind that can strike is offered at every choice point while
  // fewer than max_faults have struck. Otherwise these strike, in order (the
  // strike is recorded as the alternative it is when offered, so the schedule
  // replays in offer mode).
  std::vector<ForcedFault> forced;
  bool enabled() const { return !kinds.empty() && max_faults > 0; }
};

struct InjectedFault {
  FaultKind kind = FaultKind::kQpError;
  uint32_t rank = 0;  // the rank of the first ready event at that choice point
};

// A sim::Scheduler that asks a strategy at every choice point and records,
// for each, how many alternatives there were and which was picked. With
// faults on offer there is one more alternative per fault kind than ready
// events that can strike there (FaultApplies): picking one injects that fault
// there, through the fault handler, as a step of its own (the strategy is
// told it ran, as a ReadyEvent of rank UINT32_MAX whose kind is the fault's
// name), then the ready events are gathered again and the strategy asked once
// more, a choice point of its own. At most FaultOffer::max_faults per execution.
class RecordingScheduler final : public sim::Scheduler {
 public:
  explicit RecordingScheduler(ChoiceStrategy& strategy, FaultOffer faults = {})
      : strategy_(strategy), faults_(std::move(faults)) {}
  size_t pick(std::span<const sim::ReadyEvent> ready) override;
  // While a fault may still be injected, every event is a choice point.
  bool wants_every_event() const override { return faults_open(); }
  void ran(const sim::ReadyEvent& event) override { strategy_.ran(event); }
  void used(const sim::SharedObject& object) override { strategy_.used(object); }
  uint32_t used_kinds() const override { return strategy_.used_kinds(); }
  void nic_work_on_send_queue(uint32_t rank, uint32_t peer) override {
    strategy_.nic_work_on_send_queue(rank, peer);
  }

  const std::vector<uint32_t>& choices() const { return choices_; }
  const std::vector<uint32_t>& widths() const { return widths_; }
  // The fault picked at the last choice point, once.
  // Who injects a picked fault into the simulation (the explorer); the
  // objects it uses are reported to the strategy as the fault's.
  void set_fault_handler(std::function<void(const InjectedFault&)> handler) {
    fault_handler_ = std::move(handler);
  }
  // Whether a fault of `kind` can strike now, with the first ready event of
  // `rank` (a timeout needs a pending timer, an abort a step to abort, a
  // queue pair or a rank can fail once): only those are offered. Without
  // one, every kind can.
  using FaultApplies = std::function<bool(FaultKind kind, uint32_t rank)>;
  void set_fault_applies(FaultApplies applies) { applies_ = std::move(applies); }
  const std::vector<InjectedFault>& faults_struck() const { return struck_; }
  // What the fingerprint of a state must include: the faults struck so far.
  uint64_t fault_state() const;

 private:
  bool faults_open() const { return faults_.enabled() && struck_.size() < faults_.max_faults; }
  // The kinds that can strike at this choice point, in offer order.
  void gather_offered(uint32_t rank);
  // The alternative a forced fault takes here, if it is due and can strike.
  std::optional<uint32_t> forced_choice(uint64_t step, uint32_t ready_count);

  ChoiceStrategy& strategy_;
  FaultOffer faults_;
  std::vector<InjectedFault> struck_;
  size_t next_forced_ = 0;          // faults_.forced[next_forced_] is the next to strike
  std::vector<FaultKind> offered_;  // at the choice point being decided
  FaultApplies applies_;
  std::function<void(const InjectedFault&)> fault_handler_;
  std::vector<sim::ReadyEvent> options_;
  std::vector<uint32_t> choices_;
  std::vector<uint32_t> widths_;
};

}  // namespace tensorwire::model
