#include "model/explorer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "backend_sim/sim_clock.h"
#include "backend_sim/sim_observer.h"
#include "core/assert.h"
#include "core/protocol_invariants.h"
#include "core/splitmix64.h"
#include "core/state_digest.h"
#include "model/check_loop.h"
#include "model/dpor_search.h"
#include "model/execution_log.h"
#include "model/parallel_check.h"
#include "backend_sim/simulator.h"
#include "runner/simulation_run.h"

namespace tensorwire::model {
namespace {

constexpr double kUnboundedBandwidth = 1e14;  // the loader's largest

// One splitmix64 round per value: collisions are unsound prunes, so the mix
// must be a good one.
uint64_t mix(uint64_t h, uint64_t v) {
  uint64_t state = h + v * 0xd1b54a32d192ed03ull;
  return splitmix64(state);
}

// A fingerprint of the cluster's state at a choice point, two ways.
//
// Tensor workloads: the state itself, digested field by field (every rank's
// RdmaRendezvous with its tables, cache, pool and channels; the simulated
// hardware's queue pairs, memory bytes, CPU timelines and pending events with
// what each acts on; the workload driver's progress) plus the fault still to
// come. Equal states give equal digests however they were reached, so two
// orders of commuting completions for different tensors meet, before and
// after a fault alike.
//
// Broadcasts (which have no digest yet): histories. A rank is a
// deterministic state machine, so its state is a function of the events it
// has run: each rank's history is hashed as it grows, with every event's kind,
// its rank among the same rank's ready events of that kind (those are created
// by the rank's own code in an order its history fixes: which of two ready
// timers ran is told apart), and each completion's details. The NIC's side of
// each send queue has a history of its own: the requests it put on the wire,
// in order, with the bytes it read, wherever it took them (a post finding the
// wire free, a transfer ending), and its own events as a sum. What a queue
// holds is what the rank posted less what the NIC took, whichever order the
// two ran in, so two orders of a post and a transfer ending that put the same
// bytes on the wire meet in one state. That fingerprint combines the
// histories, what is ready now, and the fault still to come.
//
// Either way, equal fingerprints are taken as equal states: that is the
// abstraction the dfs strategy prunes with.
class Fingerprinter final : public sim::SimObserver, public sim::Scheduler {
  struct KindHash {
    const char* kind = nullptr;  // nullptr: an empty cache slot
    uint64_t start = 0;
    uint64_t hash = 0;
  };

 public:
  Fingerprinter(RecordingScheduler& inner, uint32_t ranks, std::vector<uint64_t>* out)
      : inner_(inner), ranks_(ranks), rank_hash_(ranks, 0), timeouts_by_rank_(ranks, 0),
        queue_started_(static_cast<size_t>(ranks) * ranks, 0),
        queue_nic_work_(static_cast<size_t>(ranks) * ranks, 0), out_(out) {
    const size_t entries = rank_hash_.size() + queue_started_.size() + queue_nic_work_.size();
    for (size_t slot = 0; slot < entries; ++slot) history_sum_ += history_term(slot, 0);
  }
  // The protocol's own invariants watch what the hardware did.
  void on_remote_write_landed(RankId target, uint64_t addr, uint64_t length, bool has_imm,
                              uint32_t imm) override {
    if (invariants_) invariants_->on_remote_write_landed(target, addr, length, has_imm, imm);
  }
  void set_protocols(const std::vector<Rendezvous*>& protocols,
                     std::unique_ptr<ProtocolInvariants> invariants) {
    protocols_ = protocols;
    invariants_ = std::move(invariants);
  }
  std::vector<std::string> violations() const {
    return invariants_ ? invariants_->violations() : std::vector<std::string>{};
  }

  void on_completion(RankId rank, const Completion& c) override {
    if (rank >= ranks_) return;
    for (uint64_t v : {c.wr_id, uint64_t{c.peer}, uint64_t(c.opcode), uint64_t(c.status),
                       uint64_t{c.byte_len}, uint64_t{c.imm_data}}) {
      event_hash_ = mix(event_hash_, v);
    }
  }
  void on_request_started(RankId rank, RankId peer, uint64_t wr_id,
                          std::span<const std::byte> bytes) override {
    if (rank >= ranks_ || peer >= ranks_) return;
    const size_t queue = static_cast<size_t>(rank) * ranks_ + peer;
    uint64_t h = mix(mix(queue_started_[queue], wr_id), bytes.size());
    // Eight bytes per round.
    size_t i = 0;
    for (; i + 8 <= bytes.size(); i += 8) {
      uint64_t word = 0;
      std::memcpy(&word, bytes.data() + i, 8);
      h = mix(h, word);
    }
    for (; i < bytes.size(); ++i) h = mix(h, static_cast<uint64_t>(bytes[i]));
    set_history(queue_started_, started_base(), queue, h);
  }
  void used(const sim::SharedObject& object) override {
    inner_.used(object);
    // Another rank's state changed (a queue pair's far end went to error):
    // the event belongs to that rank's history too.
    if (object.kind == sim::SharedObject::Kind::kRank && object.rank < ranks_) {
      also_ranks_.push_back(object.rank);
    }
    if (object.kind == sim::SharedObject::Kind::kQueuePair && object.rank < ranks_ &&
        static_cast<int64_t>(object.rank) != event_rank_) {
      also_ranks_.push_back(object.rank);
    }
  }
  // What the inner scheduler takes, and the uses that make an event part of
  // another rank's history.
  uint32_t used_kinds() const override {
    return inner_.used_kinds() | kind_bit(sim::SharedObject::Kind::kRank) |
           kind_bit(sim::SharedObject::Kind::kQueuePair);
  }
  void nic_work_on_send_queue(uint32_t rank, uint32_t peer) override {
    inner_.nic_work_on_send_queue(rank, peer);
    if (rank < ranks_ && peer < ranks_) queue_ = static_cast<int64_t>(rank) * ranks_ + peer;
  }
  void ran(const sim::ReadyEvent& e) override {
    flush();
    inner_.ran(e);
    if (e.rank >= ranks_) return;
    const uint64_t h = kind_hash(e.kind, 0);
    // The hash first: the characters are compared only where it matches.
    static const uint64_t timeout_hash = kind_hash(sim::SimClock::kTimeoutKind, 0);
    if (h == timeout_hash && same_kind(e.kind, sim::SimClock::kTimeoutKind)) ++timeouts_by_rank_[e.rank];
    kind_hash_ = h;
    event_hash_ = mix(h, 0x100 + chosen_ordinal_);
    event_rank_ = e.rank;
    chosen_ordinal_ = 0;
  }
  bool wants_every_event() const override { return inner_.wants_every_event(); }
  // Timeouts that fired on each rank (see excused_by_timeouts).
  const std::vector<uint64_t>& timeouts_by_rank() const { return timeouts_by_rank_; }
  void set_workload(const sim::Simulator& simulator, const WorkloadDriver& driver) {
    simulator_ = &simulator;
    driver_ = &driver;
  }
  size_t pick(std::span<const sim::ReadyEvent> ready) override {
    flush();
    ready_ = ready;
    // Random walks and PCT only count distinct states: histories are cheap
    // enough to take at every choice point, digests are not.
    if (out_ != nullptr) out_->push_back(history_fingerprint());
    const size_t chosen = inner_.pick(ready);
    ready_ = {};
    if (chosen == kGatherAgain) {
      // A fault struck: the history of each rank whose queue pairs it broke
      // says where (which fault, and on which rank, is in fault_state()).
      for (uint32_t r : also_ranks_) set_history(rank_hash_, 0, r, mix(rank_hash_[r], 0xfa0171));
      also_ranks_.clear();
      return chosen;
    }
    // Its rank among the ready events of the same rank and kind (ready is in
    // sequence order, which is the order that rank's code created them in).
    chosen_ordinal_ = 0;
    for (size_t j = 0; j < chosen && chosen < ready.size(); ++j) {
      if (ready[j].rank == ready[chosen].rank && same_kind(ready[j].kind, ready[chosen].kind)) {
        ++chosen_ordinal_;
      }
    }
    return chosen;
  }

  // The state at the choice point being decided (valid inside pick, where
  // a strategy asks for it).
  uint64_t fingerprint() const {
    if (simulator_ == nullptr || driver_ == nullptr) return history_fingerprint();
    StateDigest d;
    d.add(inner_.fault_state()).add(simulator_->state_digest()).add(driver_->state_digest());
    for (const Rendezvous* p : protocols_) d.add(p->state_digest());
    return d.value();
  }
  uint64_t history_fingerprint() const {
    const uint64_t h = mix(mix(0, inner_.fault_state()), history_sum_);
    // What is ready, as a multiset of (rank, kind): order-free, so a sum.
    uint64_t ready_sum = 0;
    for (const auto& e : ready_) {
      ready_sum += kind_hash(e.kind, mix(0, e.rank));
    }
    return mix(h, ready_sum);
  }

 private:
  // `start` mixed with every character of `kind`, remembered by the kind's
  // address: kinds are a few string constants, hashed at every event and
  // every ready event of every choice point (part 5 of issue 26). The cache
  // is the thread's, not the execution's: the hash is a function of the
  // characters and `start` alone, and an execution is too short to fill a
  // cache of its own.
  static uint64_t kind_hash(const char* kind, uint64_t start) {
    thread_local std::array<KindHash, kKindHashCacheSlots> cache{};
    const uint64_t key = (reinterpret_cast<uintptr_t>(kind) ^ start) * 0x9e3779b97f4a7c15ull;
    KindHash& slot = cache[key >> (64 - kKindHashCacheBits)];
    if (slot.kind == kind && slot.start == start) return slot.hash;
    uint64_t h = start;
    for (const char* ch = kind; *ch != 0; ++ch) h = mix(h, static_cast<unsigned char>(*ch));
    slot = {kind, start, h};
    return h;
  }

  // Kinds are string constants: the same address is the same kind, and
  // only different addresses need their characters compared; most kinds
  // differ in their first (ran() compares every event's kind with the
  // timeout kind's, by hash first: a call of strcmp each time was half a
  // percent of a random walk).
  static bool same_kind(const char* a, const char* b) {
    return a == b || (a[0] == b[0] && std::strcmp(a, b) == 0);
  }

  // The event that ran last goes into its history: its rank's, or the send
  // queue's it worked on, and that of any rank it changed directly.
  void flush() {
    if (event_rank_ >= 0) {
      if (queue_ >= 0) {
        const auto q = static_cast<size_t>(queue_);
        set_history(queue_nic_work_, nic_work_base(), q, queue_nic_work_[q] + kind_hash_);
      } else {
        const auto r = static_cast<size_t>(event_rank_);
        set_history(rank_hash_, 0, r, mix(rank_hash_[r], event_hash_));
      }
      for (uint32_t r : also_ranks_) set_history(rank_hash_, 0, r, mix(rank_hash_[r], event_hash_));
    }
    event_rank_ = -1;
    queue_ = -1;
    also_ranks_.clear();
  }

  // The histories (rank_hash_, then queue_started_, then queue_nic_work_,
  // numbered on from one array to the next) go into a fingerprint as a sum
  // of one term per entry, each the entry's value mixed with its number:
  // an event changes one or two entries, so the sum follows them there,
  // where mixing every entry in turn at every choice point cost a twentieth
  // of a random walk.
  static uint64_t history_term(size_t slot, uint64_t value) { return mix(0x9e3779b9ull + slot, value); }
  size_t started_base() const { return rank_hash_.size(); }
  size_t nic_work_base() const { return started_base() + queue_started_.size(); }
  void set_history(std::vector<uint64_t>& histories, size_t base, size_t i, uint64_t value) {
    history_sum_ += history_term(base + i, value) - history_term(base + i, histories[i]);
    histories[i] = value;
  }

  RecordingScheduler& inner_;
  uint32_t ranks_;
  std::vector<uint64_t> rank_hash_;
  std::vector<uint64_t> timeouts_by_rank_;
  // Per send queue [rank * ranks + peer]: the requests the NIC put on the
  // wire, in order, and the NIC's own events on it as a sum (their order
  // among themselves is the wire's, their order against the rank's posts
  // does not change what the queue holds).
  std::vector<uint64_t> queue_started_;
  std::vector<uint64_t> queue_nic_work_;
  uint64_t history_sum_ = 0;  // the sum of history_term over every entry
  uint64_t kind_hash_ = 0;            // of the event running now: its kind
  uint64_t event_hash_ = 0;           // its kind, its rank among its kind, what it saw
  int64_t event_rank_ = -1;           // its rank; -1: nothing to add
  int64_t queue_ = -1;                // the send queue it is NIC work on, if it is
  std::vector<uint32_t> also_ranks_;  // ranks it changed directly
  std::vector<uint64_t>* out_;
  std::vector<Rendezvous*> protocols_;
  std::unique_ptr<ProtocolInvariants> invariants_;
  std::span<const sim::ReadyEvent> ready_;     // inside pick
  const sim::Simulator* simulator_ = nullptr;  // tensor workloads only
  const WorkloadDriver* driver_ = nullptr;
  uint64_t chosen_ordinal_ = 0;
  static constexpr unsigned kKindHashCacheBits = 8;
  static constexpr size_t kKindHashCacheSlots = size_t{1} << kKindHashCacheBits;
};

}  // namespace

uint64_t derive_seed(uint64_t seed, uint64_t index) {
  uint64_t state = seed ^ (index * 0xd1b54a32d192ed03ull);
  return splitmix64(state);
}

std::string covered_transitions(const std::vector<TransitionTable>& tables) {
  std::string out;
  for (const TransitionTable& t : tables) {
    if (!out.empty()) out += "\n";
    out += t.machine() + ": " + t.covered();
  }
  return out.empty() ? "none" : out;
}

const char* check_outcome_name(CheckOutcome outcome) {
  switch (outcome) {
    case CheckOutcome::kNothingFound: return "nothing found";
    case CheckOutcome::kSafety: return "safety violation";
    case CheckOutcome::kLiveness: return "liveness violation";
    case CheckOutcome::kBadInput: return "not checked: the run hit a limit of the harness or bad input";
  }
  return "?";
}

const char* check_strategy_name(CheckStrategy strategy) {
  switch (strategy) {
    case CheckStrategy::kDfs: return "dfs";
    case CheckStrategy::kRandom: return "random";
    case CheckStrategy::kPct: return "pct";
  }
  return "?";
}

Scenario model_scenario(Scenario s) {
  auto& c = s.cluster;
  c.nic_latency_ns = 0;
  c.pcie_latency_ns = 0;
  c.nvlink_latency_ns = 0;
  c.registration_base_ns = 0;
  c.registration_per_page_ns = 0;
  c.nic_bandwidth_bytes_per_s = kUnboundedBandwidth;
  c.pcie_bandwidth_bytes_per_s = kUnboundedBandwidth;
  if (c.nvlink_bandwidth_bytes_per_s > 0) c.nvlink_bandwidth_bytes_per_s = kUnboundedBandwidth;
  c.host_memcpy_bandwidth_bytes_per_s = kUnboundedBandwidth;
  s.payload = true;
  for (WorkloadStep& step : s.workload.steps) {
    for (WorkloadPhase& phase : step.phases) {
      phase.compute_before_ns = 0;
      for (TensorTransfer& t : phase.transfers) {
        t.send_offset_ns = 0;
        t.recv_offset_ns = 0;
      }
    }
  }
  return s;
}

namespace {

// A fault as it struck: for a timeout, the rank whose timer fired; for a step
// abort, the step.
struct AppliedFault {
  InjectedFault fault;
  TimeNs at_ns = 0;
  uint64_t step_id = 0;
};

// What a fault could reach: a transfer between the two ends of the broken
// queue pair, one to or from the crashed rank, any after a failed
// registration, one of the aborted step to or from the aborting rank. A
// timeout is accounted for by count (excused_by_timeouts).
bool fault_reaches(const AppliedFault& applied, uint64_t step_id, RankId src, RankId dst) {
  const InjectedFault& fault = applied.fault;
  switch (fault.kind) {
    case FaultKind::kRegistrationFailure: return true;
    case FaultKind::kQpError: return src <= 1 && dst <= 1;
    case FaultKind::kCrash: return src == fault.rank || dst == fault.rank;
    case FaultKind::kStepAbort:
      return step_id == applied.step_id && (src == fault.rank || dst == fault.rank);
    case FaultKind::kTimeout: return false;
  }
  return false;
}

// A timeout that fired (on its own or brought forward by a `timeout` fault)
// may fail the one Recv it guards: on each rank, as many failed Recvs as
// timeouts fired there are the protocol's answer to them, not a violation
// (those another fault explains already use none).
void excused_by_timeouts(const std::vector<uint64_t>& timeouts_by_rank, const RunReport& report,
                         std::vector<Problem>& excused) {
  std::vector<uint64_t> left = timeouts_by_rank;
  for (const StepResult& step : report.workload.steps) {
    for (const TransferResult& t : step.transfers) {
      if (t.status.is_ok() || t.dst >= left.size() || left[t.dst] == 0) continue;
      std::optional<Problem> p = transfer_problem(step.step_id, t);
      if (!p || std::find(excused.begin(), excused.end(), *p) != excused.end()) continue;
      excused.push_back(*p);
      --left[t.dst];
    }
  }
}

// The hangs a crash reveals: every Recv of a live rank must still end, with
// its tensor or an error.
void add_hangs_after_crash(RankId dead, const RunReport& report, std::vector<Problem>& problems) {
  for (const StepResult& step : report.workload.steps) {
    for (const TransferResult& t : step.transfers) {
      if (t.dst == dead || t.done) continue;
      problems.push_back(liveness_problem(
          "step " + std::to_string(step.step_id) + " '" + t.name + "' " + std::to_string(t.src) +
              "->" + std::to_string(t.dst) + ": Recv never completed after rank " +
              std::to_string(dead) + " crashed",
          t.dst));
    }
  }
}

// The problems that are the protocol's answer to the injected faults, not a
// violation, decided from their kinds and ranks: a Recv that failed with an
// error after a fault that could reach it; a rank's own transport error (a
// collective's rank that gave up); and, after a crash, whatever the dead rank
// left behind (its own problems, the workload the simulator could not finish
// for it). Adds the hangs a crash reveals. Never a safety problem (wrong
// bytes, a broken invariant, the DMA sanitizer's findings): a fault injected
// earlier excuses no DMA that touches freed memory or races with another.
std::vector<Problem> answers_to_faults(const std::vector<AppliedFault>& faults,
                                       const RunReport& report, std::vector<Problem>& problems) {
  std::vector<Problem> excused;
  for (const AppliedFault& applied : faults) {
    for (const StepResult& step : report.workload.steps) {
      for (const TransferResult& t : step.transfers) {
        if (t.status.is_ok() || t.done_ns < applied.at_ns) continue;
        if (!fault_reaches(applied, step.step_id, t.src, t.dst)) continue;
        if (std::optional<Problem> p = transfer_problem(step.step_id, t)) excused.push_back(*p);
      }
    }
    if (applied.fault.kind == FaultKind::kCrash) add_hangs_after_crash(applied.fault.rank, report, problems);
  }
  for (const Problem& p : problems) {
    const bool rank_gave_up = p.kind == ProblemKind::kTransport && !p.peer.has_value();
    bool left_by_the_dead = false;
    for (const AppliedFault& applied : faults) {
      // Never wrong bytes: what the dead rank received before it died must still be right.
      left_by_the_dead |= applied.fault.kind == FaultKind::kCrash && p.kind != ProblemKind::kSafety &&
                          (p.rank == applied.fault.rank || (p.kind == ProblemKind::kLiveness && !p.rank));
    }
    TW_ASSERT_MSG(!(rank_gave_up || left_by_the_dead) || p.kind != ProblemKind::kSafety,
                  "a fault never excuses a safety problem");
    if ((rank_gave_up && !faults.empty()) || left_by_the_dead) excused.push_back(p);
  }
  return excused;
}

// Bad input when any problem is (a run that hit a limit of the harness says
// nothing about the protocol, whatever else went wrong in it); else safety
// when any problem the fault does not explain is not a hang; liveness when
// every such problem is one; nothing found otherwise.
CheckOutcome outcome_of(const std::vector<Problem>& problems, const std::vector<Problem>& excused) {
  for (const Problem& p : problems) {
    if (p.kind == ProblemKind::kBadInput) return CheckOutcome::kBadInput;
  }
  CheckOutcome outcome = CheckOutcome::kNothingFound;
  for (const Problem& p : problems) {
    if (std::find(excused.begin(), excused.end(), p) != excused.end()) continue;
    if (p.kind != ProblemKind::kLiveness) return CheckOutcome::kSafety;
    outcome = CheckOutcome::kLiveness;
  }
  return outcome;
}

}  // namespace

namespace {

// Strikes the faults the RecordingScheduler picks, inside its pick, at the
// instant being decided, and says which kinds can strike there.
class FaultInjector {
 public:
  explicit FaultInjector(TraceSink& trace) : trace_(trace) {}
  void attach(sim::Simulator& simulator) { simulator_ = &simulator; }
  void set_driver(WorkloadDriver& driver) { driver_ = &driver; }
  const std::vector<AppliedFault>& applied() const { return applied_; }

  bool applies(FaultKind kind, uint32_t rank) const {
    if (simulator_ == nullptr) return false;
    const uint32_t world = simulator_->world_size();
    switch (kind) {
      case FaultKind::kQpError: return world >= 2 && !struck(FaultKind::kQpError, std::nullopt);
      case FaultKind::kRegistrationFailure: return rank < world;
      case FaultKind::kCrash: return rank < world && !struck(FaultKind::kCrash, rank);
      case FaultKind::kTimeout: return simulator_->timeout_pending();
      case FaultKind::kStepAbort: return driver_ != nullptr && driver_->can_abort_step(rank);
    }
    return false;
  }

  void strike(const InjectedFault& fault) {
    TW_ASSERT_MSG(applies(fault.kind, fault.rank), "only a fault that can strike is offered");
    AppliedFault a{fault, simulator_->now_ns(), 0};
    std::string where = "rank " + std::to_string(fault.rank);
    switch (fault.kind) {
      case FaultKind::kQpError:
        simulator_->break_queue_pair(0, 1);
        where = "queue pair between ranks 0 and 1";
        break;
      case FaultKind::kRegistrationFailure: simulator_->fail_next_registration(fault.rank); break;
      case FaultKind::kCrash: simulator_->crash_rank(fault.rank); break;
      case FaultKind::kTimeout:
        a.fault.rank = simulator_->fire_timeout_now().value_or(0);
        where = "the earliest pending timeout, of rank " + std::to_string(a.fault.rank);
        break;
      case FaultKind::kStepAbort:
        a.step_id = driver_->abort_step(fault.rank, Status(StatusCode::kAborted, "step aborted by the model checker"))
                        .value_or(0);
        where += ", step " + std::to_string(a.step_id);
        break;
    }
    applied_.push_back(a);
    // The counterexample's trace says where the fault struck.
    trace_.instant("model checker", std::string("fault: ") + fault_kind_name(fault.kind), a.at_ns, where);
  }

 private:
  bool struck(FaultKind kind, std::optional<uint32_t> rank) const {
    for (const AppliedFault& a : applied_) {
      if (a.fault.kind == kind && (!rank || a.fault.rank == *rank)) return true;
    }
    return false;
  }

  TraceSink& trace_;
  sim::Simulator* simulator_ = nullptr;  // lives as long as the run
  WorkloadDriver* driver_ = nullptr;     // point-to-point workloads only
  std::vector<AppliedFault> applied_;
};

}  // namespace

Execution run_execution(const Scenario& scenario, uint64_t seed, ChoiceStrategy& strategy,
                        TraceSink& trace, std::vector<uint64_t>* state_fingerprints,
                        FaultOffer faults) {
  RecordingScheduler recorder(strategy, faults);
  Fingerprinter fingerprinter(recorder, scenario.cluster.nodes, state_fingerprints);
  FaultInjector injector(trace);
  SimulationOptions options;
  options.seed = seed;
  options.has_seed = true;
  // Freed memory poisoned and reused first: an early free corrupts bytes.
  options.adversarial_memory = true;
  options.measurements = false;  // an execution's verdict needs none of them
  options.transition_coverage = false;  // counted once per search, by CheckTally::finish
  options.scheduler = &fingerprinter;
  options.observer = &fingerprinter;
  const ProtocolDescriptor& protocol = scenario.protocol.descriptor();
  options.on_started = [&fingerprinter, &protocol](const std::vector<Rendezvous*>& p) {
    fingerprinter.set_protocols(p, protocol.make_invariants({p.begin(), p.end()}));
  };
  options.on_attached = [&injector](sim::Simulator& simulator) { injector.attach(simulator); };
  options.on_workload_started = [&fingerprinter, &injector](const sim::Simulator& simulator,
                                                            WorkloadDriver& driver) {
    fingerprinter.set_workload(simulator, driver);
    injector.set_driver(driver);
  };
  // dfs asks for the fingerprint only at the choice points it expands (not
  // along the prefix it replays): digesting the state is the costly part.
  auto* dpor = dynamic_cast<DporSearch*>(&strategy);
  if (dpor != nullptr) dpor->set_fingerprint([&fingerprinter] { return fingerprinter.fingerprint(); });
  // A dfs execution run ahead for the search in another thread: the same.
  auto* recorder_of_dfs = dynamic_cast<ExecutionRecorder*>(&strategy);
  if (recorder_of_dfs != nullptr) {
    recorder_of_dfs->set_fingerprint([&fingerprinter] { return fingerprinter.fingerprint(); });
  }
  // Only those two ask for digests of the state.
  options.state_digests = dpor != nullptr || recorder_of_dfs != nullptr;
  if (faults.enabled()) {
    recorder.set_fault_handler([&injector](const InjectedFault& fault) { injector.strike(fault); });
    recorder.set_fault_applies(
        [&injector](FaultKind kind, uint32_t rank) { return injector.applies(kind, rank); });
  }
  Execution e;
  RunReport report = run_simulation(scenario, options, trace);
  // The invariants' violations first: they say where it went wrong, the run's
  // checks what it led to.
  for (const std::string& v : fingerprinter.violations()) e.problems.push_back(safety_problem(v));
  e.problems.insert(e.problems.end(), report.problems.begin(), report.problems.end());
  e.events = report.events_processed;
  e.transitions = std::move(report.transitions);
  e.coverage = std::move(report.coverage);
  if (dpor != nullptr) dpor->set_fingerprint({});  // the fingerprinter dies here
  if (recorder_of_dfs != nullptr) recorder_of_dfs->set_fingerprint({});
  e.choices = recorder.choices();
  e.widths = recorder.widths();
  if (auto* replay = dynamic_cast<ReplayStrategy*>(&strategy)) e.diverged = replay->diverged();
  e.faults_injected = recorder.faults_struck().size();
  std::vector<Problem> excused = answers_to_faults(injector.applied(), report, e.problems);
  excused_by_timeouts(fingerprinter.timeouts_by_rank(), report, excused);
  e.outcome = outcome_of(e.problems, excused);
  e.excused = std::move(excused);
  return e;
}

std::vector<sim::SharedObject> qp_error_objects(uint32_t ranks) {
  std::vector<sim::SharedObject> objects = {
      sim::SharedObject::queue_pair(0, 1), sim::SharedObject::queue_pair(1, 0),
      sim::SharedObject::send_queue(0, 1), sim::SharedObject::send_queue(1, 0)};
  if (ranks > 2) {
    for (uint32_t r = 0; r < ranks; ++r) {
      objects.push_back(sim::SharedObject::whole_rank(r));
      for (uint32_t p = 0; p < ranks; ++p) objects.push_back(sim::SharedObject::send_queue(r, p));
    }
  }
  return objects;
}

// The faults execution `index` may inject. Random walks and PCT get theirs
// forced at points drawn in advance (else they would strike at once): from
// one to max_faults of them, each of a kind and at a choice point drawn
// uniformly, after a fault-free first execution that measures how long
// executions are. dfs is offered every kind at every choice point.
FaultOffer fault_offer(const CheckOptions& options, uint64_t index, uint64_t strategy_seed,
                       uint64_t expected_steps) {
  FaultOffer faults;
  faults.kinds = options.faults;
  faults.max_faults = options.max_faults;
  if (!faults.enabled() || options.strategy == CheckStrategy::kDfs) return faults;
  if (index == 0) {
    faults.kinds.clear();
    return faults;
  }
  uint64_t draw = derive_seed(strategy_seed, 1);
  const uint64_t count = 1 + splitmix64(draw) % options.max_faults;
  for (uint64_t f = 0; f < count; ++f) {
    const uint64_t d = splitmix64(draw);
    faults.forced.push_back({(d / options.faults.size()) % std::max<uint64_t>(expected_steps, 1),
                             static_cast<uint32_t>(d % options.faults.size())});
  }
  std::sort(faults.forced.begin(), faults.forced.end(),
            [](const ForcedFault& a, const ForcedFault& b) { return a.at < b.at; });
  return faults;
}

// One PCT execution. Its k, `steps`, is measured: the most steps (events
// run) an execution took so far, this one included once it is done.
Execution run_pct(const Scenario& scenario, const CheckOptions& options, uint64_t strategy_seed,
                  uint64_t& steps, std::vector<uint64_t>& fingerprints, const FaultOffer& faults) {
  PctStrategy pct(strategy_seed, options.pct_depth, steps);
  NullTraceSink trace;
  Execution e = run_execution(scenario, options.seed, pct, trace, &fingerprints, faults);
  steps = std::max(steps, pct.steps());
  return e;
}

void configure_dfs(DporSearch& dpor, const Scenario& scenario, const CheckOptions& options) {
  dpor.cache_states(options.exact);
  if (options.faults.size() == 1 && options.faults[0] == FaultKind::kQpError &&
      options.max_faults == 1 && scenario.cluster.nodes >= 2) {
    // A QP error acts on one queue pair only: dfs places it by its races
    // with the events that use it instead of trying it at every choice point.
    dpor.place_fault_by_races(fault_kind_name(FaultKind::kQpError),
                              qp_error_objects(scenario.cluster.nodes));
  }
  dpor.keep_share(options.shard_index, options.shard_count);
}

bool CheckTally::add(Execution&& e, const ExecutionKey& key, const CheckProgress& on_progress) {
  if (key.first_of_search || !e.fault_injected()) {
    expected_steps = std::max<uint64_t>(expected_steps, e.choices.size());
  }
  ++report.schedules;
  add_transition_tables(report.transitions, e.transitions);
  report.coverage.add(e.coverage);
  report.choice_points += e.choices.size();
  report.events += e.events;
  states.insert(key.fingerprints.begin(), key.fingerprints.end());
  if (on_progress) on_progress(report.schedules, total);
  if (e.outcome == CheckOutcome::kNothingFound) return false;
  report.outcome = e.outcome;
  report.counterexample = std::move(e);
  report.counterexample_seed = key.strategy_seed;
  report.counterexample_faults = key.faults.kinds;
  return true;
}

void CheckTally::finish(const CheckOptions& options, const DporSearch* dpor) {
  const bool dfs = options.strategy == CheckStrategy::kDfs && dpor != nullptr;
  report.cached_schedules = dpor != nullptr ? dpor->cached_executions() : 0;
  report.distinct_states = dfs ? dpor->distinct_states() : states.size();
  // The executions' transition tables, summed, counted into the coverage
  // once (run_execution leaves them out of each execution's).
  add_transition_coverage(report.coverage, report.transitions);
  if (!options.keep_states) return;
  report.states = dfs ? dpor->seen_states().values() : states.values();
  std::sort(report.states.begin(), report.states.end());
}

uint64_t shard_schedules(const CheckOptions& options) {
  const uint64_t n = options.shard_count, i = options.shard_index;
  return options.max_schedules / n + (i < options.max_schedules % n ? 1 : 0);
}

uint64_t execution_index(const CheckOptions& options, uint64_t n) {
  if (options.strategy == CheckStrategy::kDfs) return n;
  return n * options.shard_count + options.shard_index;
}

Execution run_walk(const Scenario& scenario, const CheckOptions& options, uint64_t strategy_seed,
                   std::vector<uint64_t>& fingerprints, const FaultOffer& faults) {
  RandomWalkStrategy walk(strategy_seed);
  NullTraceSink trace;
  return run_execution(scenario, options.seed, walk, trace, &fingerprints, faults);
}

CheckReport check(const Scenario& input, const CheckOptions& options, CheckProgress on_progress) {
  TW_ASSERT(options.shard_count >= 1 && options.shard_index < options.shard_count);
  const Scenario scenario = model_scenario(input);
  if (options.jobs > 1) return check_in_parallel(scenario, options, on_progress);
  const bool dfs = options.strategy == CheckStrategy::kDfs;
  CheckTally tally;
  // A shard of random walks or pct runs every shard_count-th execution.
  tally.total = dfs ? options.max_schedules : shard_schedules(options);
  std::vector<uint64_t> fingerprints;
  DporSearch dpor(scenario.cluster.nodes);  // dfs
  configure_dfs(dpor, scenario, options);
  NullTraceSink trace;
  for (uint64_t n = 0; n < tally.total; ++n) {
    const uint64_t strategy_seed = derive_seed(options.seed, execution_index(options, n));
    fingerprints.clear();
    Execution e;
    FaultOffer faults = fault_offer(options, n, strategy_seed, tally.expected_steps);
    switch (options.strategy) {
      case CheckStrategy::kDfs: e = run_execution(scenario, options.seed, dpor, trace, nullptr, faults); break;
      case CheckStrategy::kRandom: e = run_walk(scenario, options, strategy_seed, fingerprints, faults); break;
      case CheckStrategy::kPct:
        e = run_pct(scenario, options, strategy_seed, tally.pct_steps, fingerprints, faults);
        break;
    }
    if (tally.add(std::move(e), {n == 0, strategy_seed, faults, fingerprints}, on_progress)) break;
    if (dfs && !dpor.next_execution()) {
      tally.report.exhausted = true;
      break;
    }
  }
  tally.finish(options, &dpor);
  return std::move(tally.report);
}

}  // namespace tensorwire::model
