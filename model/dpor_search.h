// Exhaustive search with dynamic partial-order reduction: the dfs strategy.
//
// Plain depth-first search over every order of same-time events is
// exponential in the events that are merely concurrent: two ranks each
// handling their own completions give every interleaving of the two lists,
// though all of them end in the same state. Dynamic partial-order reduction
// (Flanagan and Godefroid, POPL 2005) explores one order of independent
// events and adds an alternative at a choice point only where the execution
// shows a race: two dependent events whose order could have been the other
// way. Where the racing event was not ready yet at the earlier choice point,
// what goes first instead is chosen as in source-DPOR (Abdulla et al., POPL
// 2014). Sleep sets were tried on top and dropped: they saved a fifth of the
// executions and, in this event model, lost orders (tests/model's brute-force
// comparison caught it).
//
// Independence, as the simulator defines it, over objects: each rank's own
// state (its protocol, memory, registrations, receive queues) and the send
// side of each queue pair (its queue of work requests and the wire it feeds).
// An event of a rank's code (a completion handled, a timer, a copy ending)
// changes that rank's state, the send queues it posts to
// (sim::Scheduler::used_send_queue) and any rank it reports through
// sim::Scheduler::touched (a queue pair's far end going to error). The NIC's
// own work on a send queue (a transfer ending, the next request put on the
// wire: sim::Scheduler::nic_work_on_send_queue) changes that send queue only,
// plus the rank's state where it reads it (taking the next request's bytes
// from memory reports touched). Events whose sets of objects are disjoint
// commute, up to the timing of the fair-shared ports (which the model
// scenario makes instantaneous). Two events can only swap if they are due at
// the same time; one causally after another (scheduled by it, or by an event
// after it) never can. An injected fault touches everything, and is explored
// at every choice point where it is still open, unless it was declared to act
// on a few objects only (place_fault_by_races): then it is an event of its
// own, always ready while no fault has struck, placed the way any event is,
// by its races.
//
// Placing such a fault by races: an execution where it never struck ends as
// if it struck last (a virtual step after the others); it races with the last
// event before it on each of its objects, whatever their times (a fault may
// strike at any instant), and each race puts it before that event, at that
// event's choice point (the classic rule of Flanagan and Godefroid for an
// event that is ready there: no source sets). The execution where it struck
// there shows its race with the event on its objects before that, and so on
// back. Between two events on its objects, where it falls changes nothing
// (what it acts on is the same), so only the places next to those events are
// tried. tests/model/dpor_search_test.cc checks this against brute force.
//
// The NIC's work being its own object is what makes three tensors tractable:
// with every event of a rank dependent on every other, each transfer ending
// was explored before and after each of the rank's completions.
//
// Each execution runs the scenario from the start (the simulator has no
// snapshots), following the choices of the current prefix, then the first
// ready event. Its race analysis, though, starts where it branched from the
// execution before: the replayed steps are that one's, and so are their
// vector clocks and races (tests/model checks this against analysing every
// execution from its first step).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "backend_sim/scheduler.h"
#include "model/choice_strategy.h"
#include "model/fingerprint_set.h"

namespace tensorwire::model {

class DporSearch final : public ChoiceStrategy {
 public:
  static constexpr uint32_t kMemoryBins = 16;
  // The bins (bit i: bin i of `bins`) that a memory range of a rank falls
  // in: 256-byte units, modulo the bins; every bin for a range of as many
  // units as there are bins. Public for its test.
  static uint64_t memory_bin_bits(uint64_t addr, uint64_t length, uint32_t bins);

  explicit DporSearch(uint32_t ranks);

  // ChoiceStrategy: the search runs as the strategy of each execution.
  uint32_t choose(std::span<const sim::ReadyEvent> ready, uint64_t step) override;
  void ran(const sim::ReadyEvent& event) override;
  void used(const sim::SharedObject& object) override;
  void nic_work_on_send_queue(uint32_t rank, uint32_t peer) override;

  // After an execution: finds its races, then sets up the next execution.
  // False when every alternative has been explored. Throws std::logic_error
  // when the simulator did not replay a prefix the same way (it must be
  // deterministic for any of this to hold).
  bool next_execution();

  // State caching on top: at each new choice point the search asks
  // `fingerprint` (set for each execution by whoever runs it) for the state
  // there; a choice point whose state was reached before is not expanded
  // again: the rest of the execution runs out unrecorded. Equal fingerprints
  // are taken as equal states (the explorer's state abstraction).
  //
  // With `exact`, a seen state is cut only at the first choice point of a
  // simulated instant, which loses no order the reduction alone would explore
  // (and cuts far less). Without it, anywhere: much faster, but the races
  // between the current prefix and the cut tail go unexamined, which can lose
  // orders (the classic gap between stateless DPOR and a state cache).
  void cache_states(bool exact = false) {
    caching_ = true;
    exact_ = exact;
  }
  void set_fingerprint(std::function<uint64_t()> fingerprint) { fingerprint_ = std::move(fingerprint); }
  uint64_t distinct_states() const { return seen_.size(); }
  // Off: every execution's races are analysed from its first step, as they
  // were before the analysis kept what it knew of the replayed prefix (the
  // reference tests/model compares the incremental analysis with).
  void set_incremental_analysis(bool on) { incremental_ = on; }
  // Told each state as it enters the cache (the threaded search shares them
  // with the threads that run executions ahead).
  void set_on_new_state(std::function<void(uint64_t)> on_new_state) {
    on_new_state_ = std::move(on_new_state);
  }

  // The fault offered as `kind` (its name, as RecordingScheduler offers it:
  // "qp_error") acts on `objects` only, reads and changes nothing else, and
  // is always ready until some fault strikes: it is placed by its races (see
  // the top of this file) rather than tried at every choice point. The
  // objects must be everything the fault reports using when it strikes,
  // wherever it strikes. Only one kind may be declared.
  void place_fault_by_races(std::string kind, const std::vector<sim::SharedObject>& objects);
  uint64_t cached_executions() const { return cached_; }
  const FingerprintSet& seen_states() const { return seen_; }

  // The choices the next execution replays before it takes the first ready
  // event at each new choice point (after next_execution; empty at first).
  std::vector<uint32_t> current_prefix() const;
  // The prefixes of up to `limit` alternatives still to explore, in the order
  // next_execution would take them if no race added another: each will run
  // (unless the search stops first), so they may be run ahead of time.
  std::vector<std::vector<uint32_t>> pending_prefixes(size_t limit) const;

  // Shard `index` of `count` (check --shard): after the first execution,
  // which every shard runs, each alternative it left to explore belongs to
  // one shard, by a hash of its prefix; the others are dropped. What a
  // shard's own executions add is its own to explore. Every alternative is
  // kept by some shard, so the shards together cover the whole search (some
  // alternatives more than once, where several shards' executions race to
  // them; each shard caches states on its own).
  void keep_share(uint32_t index, uint32_t count) {
    share_index_ = index;
    share_count_ = count;
  }

 private:
  struct Node {
    std::vector<uint64_t> sequences;  // per alternative; fault_key(k) for the k-th fault offered
    std::vector<uint8_t> backtrack;   // alternatives to explore
    std::vector<uint8_t> done;        // alternatives explored, or being explored
    uint32_t chosen = 0;
  };
  struct Step {  // one event of the current execution
    uint64_t sequence = 0;
    uint64_t match = 0;      // what the alternative that chose it holds: sequence, or a fault key
    bool fault = false;      // an injected fault
    bool by_races = false;   // a fault placed by its races (place_fault_by_races)
    uint64_t parent = 0;
    int64_t at_ns = 0;
    uint64_t own = 0;        // the object the event itself is: its rank, or a send queue
    uint64_t footprint = 0;  // object bits it reported, then own as well
    int64_t node = -1;       // the choice point it was chosen at, if any
  };

  // One bit per object: ranks, then each send queue, then each rank's CPU,
  // then each rank's memory in kMemoryBins bins (by 256-byte unit, the
  // simulator's allocation alignment, modulo the bins), as many as fit in 64
  // bits. What does not fit shares its rank's bit: more dependence than
  // there is, never less. Ranks past 63 share the last bit.
  uint64_t rank_bit(uint32_t rank) const;
  uint64_t bits_of(const sim::SharedObject& object) const;
  static uint64_t object_bit(uint32_t object);
  static uint64_t fault_key(size_t k) { return UINT64_MAX - 1 - k; }
  static bool is_fault_key(uint64_t key) { return key >= UINT64_MAX - 64 && key != UINT64_MAX; }
  void add_backtrack(size_t node, size_t j, size_t i,
                     const std::vector<std::vector<uint32_t>>& clock);
  void analyse_races();
  void append_unstruck_fault();
  std::vector<int64_t> last_steps_on_objects(size_t steps, uint64_t width_mask) const;
  void keep_analysis_before(size_t node);
  void drop_others_shares();

  uint32_t ranks_;
  uint32_t objects_;            // bits in use
  bool send_queues_apart_;      // send queues have bits of their own
  bool queue_pairs_apart_;      // queue pairs have bits of their own
  uint32_t memory_bins_ = 0;    // per rank; 0: CPU and memory share the rank's bit
  std::vector<Node> nodes_;  // the current path's choice points
  size_t prefix_ = 0;        // nodes_[0, prefix_) are replayed as chosen

  // Per execution.
  std::vector<Step> steps_;
  // analyse_races' scratch: each step's vector clock, each sequence's step,
  // kept from execution to execution (their capacity: allocating a clock per
  // event was a tenth of the analysis).
  std::vector<std::vector<uint32_t>> clocks_;
  absl::flat_hash_map<uint64_t, size_t> step_of_sequence_;
  // The first steps of the current execution that are the last analysed
  // one's (replayed up to the choice point it branched at).
  size_t reuse_steps_ = 0;
  bool incremental_ = true;
  int64_t pending_node_ = -1;     // the choice point whose event runs next
  uint64_t pending_key_ = 0;      // what that choice point chose (sequence or fault key)
  bool fault_struck_ = false;     // in this execution

  // place_fault_by_races
  std::string raced_fault_kind_;
  uint64_t raced_fault_bits_ = 0;
  uint64_t raced_fault_key_ = 0;  // its alternatives' key, once offered; 0: not seen
  size_t blocked_at_ = SIZE_MAX;  // steps_ index where a cached state was reached
  bool caching_ = false;
  std::function<uint64_t()> fingerprint_;
  std::function<void(uint64_t)> on_new_state_;
  bool exact_ = false;
  FingerprintSet seen_;
  uint64_t cached_ = 0;
  uint32_t share_index_ = 0;
  uint32_t share_count_ = 1;
  bool first_execution_ = true;
};

}  // namespace tensorwire::model
