// The simulator's one queue of pending events, ordered by (time, sequence).
// Ties at the same time go to a Scheduler when one is installed; the default is
// insertion order. Cancelled events are dropped when they surface and are not
// counted as processed.
//
// Without a scheduler, an event due now (a completion handed to the CPU that
// is free, a post, a timer of zero) skips the heap: it goes to a FIFO of "now"
// events. That keeps the order exactly: every heap entry due now was
// scheduled before time reached now, so it has a smaller sequence than every
// FIFO entry and runs first; the FIFO then runs in insertion order, and time
// cannot move on while it holds a live event.
//
// Without a scheduler, events due at one future time share one heap entry:
// the first of them (the head) is in the heap and the others wait behind it
// in its tie chain, in sequence order; when the head is popped its chain
// becomes the FIFO of events due now. A parameter server's workers schedule
// the same layer's Send at the same offset, and flows sharing a bottleneck
// equally end together: 98.5 % of a 256-node run's heap pops found another
// entry of the same time on top, each one paying a sift through a heap of
// thousands. A chain is found by its time in a small direct-mapped table of
// recent heads; a miss only costs a second head for that time, which is kept
// in order because the heap and the FIFO are merged by sequence at now; a
// heap of a few entries (two ranks' traffic) skips the table the same way.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "backend_sim/event_callback.h"
#include "backend_sim/scheduler.h"
#include "core/assert.h"
#include "core/clock.h"
#include "core/state_digest.h"

namespace tensorwire::sim {

struct EventId {
  uint32_t slot = 0;
  uint64_t sequence = 0;  // 0: no event
  bool valid() const { return sequence != 0; }
};

class EventQueue {
 public:
  EventQueue();
  ~EventQueue();

  TimeNs now_ns() const { return now_ns_; }
  // `rank` and `kind` are what a Scheduler sees. `what` says what this event
  // of its kind will act on (a queue pair and work request, a copy's
  // buffers), for pending_digest(): two pending events of one kind that act
  // on different things must differ there.
  // `fn` is any callable of no arguments (or an EventCallback), built straight
  // into the event's slot.
  template <typename F>
  EventId schedule_at(TimeNs at_ns, uint32_t rank, const char* kind, uint64_t what, F&& fn) {
    const EventId id = add_event(at_ns, rank, kind, what);
    EventCallback& slot_fn = slot(id.slot).fn;
    slot_fn.emplace(std::forward<F>(fn));
    TW_ASSERT_HOT_MSG(static_cast<bool>(slot_fn), "an event runs something");
    return id;
  }
  template <typename F>
  EventId schedule_at(TimeNs at_ns, uint32_t rank, const char* kind, F&& fn) {
    return schedule_at(at_ns, rank, kind, 0, std::forward<F>(fn));
  }
  template <typename F>
  EventId schedule_after(TimeNs delay_ns, uint32_t rank, const char* kind, uint64_t what,
                         F&& fn) {
    return schedule_at(now_ns_ + (delay_ns > 0 ? delay_ns : 0), rank, kind, what,
                       std::forward<F>(fn));
  }
  template <typename F>
  EventId schedule_after(TimeNs delay_ns, uint32_t rank, const char* kind, F&& fn) {
    return schedule_after(delay_ns, rank, kind, 0, std::forward<F>(fn));
  }
  // What the running event shares with others (see Scheduler::used); no-op
  // without a scheduler that wants to know.
  void use(const SharedObject& object) {
    if ((used_kinds_ & Scheduler::kind_bit(object.kind)) != 0) scheduler_->used(object);
  }
  // The running event changed `rank`'s state directly (a queue pair's far end
  // went to error), not by scheduling an event for it.
  void touch(uint32_t rank) { use(SharedObject::whole_rank(rank)); }
  // The run is over and its report taken: what the world does from here on
  // (its teardown, freeing and deregistering everything) is no event and
  // changes no outcome, so the scheduler hears of none of it.
  void stop_reporting_uses() { used_kinds_ = 0; }
  void nic_work_on_send_queue(uint32_t rank, uint32_t peer) {
    if (scheduler_) scheduler_->nic_work_on_send_queue(rank, peer);
  }
  // A scheduler is installed: a model checker, which may digest the state.
  bool digesting() const { return scheduler_ != nullptr; }
  // Off: no one will call pending_digest() (a model checker that never
  // digests the state: random walks, PCT), so `what` hashes nothing.
  void set_state_digests(bool on) { state_digests_ = on; }
  // Whether a `what` is read: what() below, for a `what` built by hand.
  bool wants_what() const { return scheduler_ != nullptr && state_digests_; }
  // A `what` for schedule_at from the values an event acts on; 0 without a
  // scheduler or without state digests (only a model checker that digests
  // the state reads it, so nothing else pays for it).
  template <typename... Values>
  uint64_t what(Values... values) const {
    if (!wants_what()) return 0;
    StateDigest d;
    (d.add(static_cast<uint64_t>(values)), ...);
    return d.value();
  }
  // No-op for an event that already ran or was cancelled.
  void cancel(EventId id);
  // Moves the earliest live event of `kind` due later than now to now, keeping
  // its id (so cancelling it still works): a model checker making a timeout
  // fire early. Its rank, or nullopt when no such event is pending. Called
  // between events or inside a scheduler's pick, whose ready events are then
  // gathered again.
  std::optional<uint32_t> bring_forward(std::string_view kind);
  // Whether bring_forward(kind) would find an event.
  bool has_later(std::string_view kind) const;
  bool is_pending(EventId id) const;

  // Runs the next live event; false when there is none.
  bool run_next();
  // Runs events until none is left (Simulator::run): the same order as
  // calling run_next() until it returns false. Without a scheduler the
  // loop has the pop and the run inline, with no call of run_next, pop_live
  // and run_slot per event (the loop in one piece has 8 % fewer of the bare
  // event loop's instructions).
  void run_until_empty();
  // Time of the earliest live event; false when there is none.
  bool next_time(TimeNs& at_ns);
  void advance_to(TimeNs at_ns) {
    if (at_ns > now_ns_) now_ns_ = at_ns;
  }
  bool empty() const { return live_ == 0 && !instant_end_pending_; }
  // Work that may wait until every event due now has run (no scheduler
  // only): `hook` runs once, after the last event of the current instant and
  // before time moves on; the events it schedules at now run next. A second
  // request before it ran is the same request. One hook per queue.
  void set_instant_end_hook(EventCallback hook) { instant_end_hook_ = std::move(hook); }
  void request_instant_end() {
    TW_ASSERT_HOT_MSG(!scheduler_, "a model checker orders every event: nothing waits for the instant's end");
    TW_ASSERT_HOT_MSG(static_cast<bool>(instant_end_hook_), "an instant-end request has a hook to run");
    instant_end_pending_ = true;
  }
  uint64_t processed() const { return processed_; }
  // What is pending, as a multiset of (rank, kind, what, due in how long),
  // the events ready now (a scheduler's choice) included: for model
  // checkers' state caches. Sequence numbers, which count history,
  // are left out; so is the closure, whose effect the kind, `what` and the
  // state it will read decide.
  uint64_t pending_digest() const;

  void set_scheduler(std::unique_ptr<Scheduler> scheduler);

 private:
  struct HeapEntry {
    TimeNs at_ns;
    uint64_t sequence;
    uint32_t slot;
    // A heap entry's tie chain (0: none; FIFO and ready entries have none):
    // in the padding the struct has anyway.
    uint32_t chain;
  };
  static constexpr uint32_t kNotInHeap = UINT32_MAX;
  // The events due at a head's time after it, from `next` on, in sequence
  // order; cancelled ones stay until they surface.
  struct TieChain {
    std::vector<HeapEntry> entries;
    size_t next = 0;
  };
  // A head the table of recent times knows: valid while that slot still
  // holds that sequence in the heap.
  struct RecentHead {
    TimeNs at_ns = -1;
    uint32_t slot = 0;
    uint64_t sequence = 0;
  };
  static constexpr uint32_t kRecentHeadBits = 8;
  // A heap this small sifts in a step or two: an event joins no chain (a
  // second head of its time is kept in order as a miss of the table is).
  static constexpr size_t kTieChainsFrom = 16;
  struct Slot {
    EventCallback fn;
    uint64_t sequence = 0;  // 0 when free or cancelled
    uint32_t rank = 0;
    const char* kind = "";
    uint64_t what = 0;
    uint64_t parent = 0;  // the sequence of the event that was running when it was scheduled
    // pending_digest's term for (rank, kind, what), hashed the first time
    // the event is digested (0: not yet): the digest is taken at every
    // choice point dfs expands, over every pending event.
    mutable uint64_t digest_term = 0;
  };
  // Slots live in chunks that never move, so an event's callable runs in
  // place in its slot while the events it schedules add slots.
  static constexpr uint32_t kSlotChunkBits = 8;
  static constexpr uint32_t kSlotChunk = 1u << kSlotChunkBits;
  Slot& slot(uint32_t index) { return slot_chunks_[index >> kSlotChunkBits][index & (kSlotChunk - 1)]; }
  const Slot& slot(uint32_t index) const {
    return slot_chunks_[index >> kSlotChunkBits][index & (kSlotChunk - 1)];
  }
  // Takes a free slot for a new event (its callable still empty) and queues
  // its entry.
  EventId add_event(TimeNs at_ns, uint32_t rank, const char* kind, uint64_t what);
  static uint64_t digest_term_of(const Slot& slot);
  // (time, sequence) as one 128-bit number: one comparison the compiler
  // makes without a branch, where the sift loops' branches on time, then on
  // sequence, were mispredicted about half the time. Times are never
  // negative (the queue starts at 0 and never goes back).
  __extension__ using Key = unsigned __int128;
  static Key key_of(TimeNs at_ns, uint64_t sequence) {
    return (static_cast<Key>(static_cast<uint64_t>(at_ns)) << 64) | sequence;
  }
  static Key key_of(const HeapEntry& e) { return key_of(e.at_ns, e.sequence); }
  static bool later(const HeapEntry& a, const HeapEntry& b) { return key_of(a) > key_of(b); }
  void drop_cancelled();
  void pop_heap_top();
  void pop_root_bottom_up();  // pop_heap_top for a heap of over kBottomUpFrom entries
  // The heap keeps each entry's position (heap_pos_, by slot: an indexed
  // heap), so that cancel() removes the entry at once. Four children per
  // node: half the depth of a binary heap, and a node's children share one
  // or two cache lines. The positions live apart from the slots, so that a
  // sift touches the heap and one small array, not every moved event's slot.
  static constexpr size_t kHeapArity = 4;
  // pop_heap_top's bottom-up removal pays from about three levels on.
  static constexpr size_t kBottomUpFrom = 1 + kHeapArity + kHeapArity * kHeapArity;
  void place(size_t pos, const HeapEntry& e);
  void sift_up(size_t pos);
  size_t earliest_child(size_t first, size_t n) const;
  void sift_down(size_t pos);
  void heap_insert(TimeNs at_ns, uint64_t sequence, uint32_t slot);
  void heap_remove(size_t pos);
  // Tie chains (no scheduler only).
  RecentHead& recent_head(TimeNs at_ns);
  bool join_tie_chain(TimeNs at_ns, uint64_t sequence, uint32_t slot);
  bool promote_from_chain(size_t pos);
  void splice_chain(uint32_t chain, const HeapEntry& head);
  void release_chain(uint32_t chain);
  void dissolve_chains();  // every chained event gets a heap entry of its own
  template <typename F>
  void for_each_queued(F&& f) const;  // heap entries and the chains behind them
  bool now_fifo_empty() const { return now_head_ == now_fifo_.size(); }
  HeapEntry pop_now_fifo();
  // Which queue holds the next event in (time, sequence) order (no scheduler).
  // At now the two merge by sequence: a chain spliced into the FIFO may
  // hold events older than a second head of the same time still in the heap.
  bool next_is_in_heap() const {
    return !heap_.empty() &&
           (now_fifo_empty() || (heap_.front().at_ns == now_ns_ &&
                                 heap_.front().sequence < now_fifo_[now_head_].sequence));
  }
  bool pop_live(HeapEntry& out);
  bool gather_ready();  // scheduler path; false when nothing is pending
  // Runs the instant-end hook if it was requested and nothing live is due now.
  bool run_instant_end_if_due();
  void run_slot(uint32_t slot);
  // Runs a popped event, without a scheduler (run_next, run_until_empty).
  void run_in_order(const HeapEntry& e);

  std::vector<HeapEntry> heap_;
  std::vector<uint32_t> heap_pos_;  // per slot: its entry's place in heap_, or kNotInHeap
  // Events due at now_ns_, in sequence order, from now_head_ on (no scheduler
  // only; set_scheduler moves them to the heap).
  std::vector<HeapEntry> now_fifo_;
  size_t now_head_ = 0;
  std::vector<std::unique_ptr<Slot[]>> slot_chunks_;
  uint32_t slot_count_ = 0;  // slots made so far, in use or free
  std::vector<uint32_t> free_slots_;
  EventCallback instant_end_hook_;
  bool instant_end_pending_ = false;
  std::unique_ptr<Scheduler> scheduler_;  // null: insertion order
  uint32_t used_kinds_ = 0;               // scheduler_->used_kinds(); 0 without one
  bool state_digests_ = true;             // see set_state_digests
  // Scheduler path: the events due now, in sequence order (some may be
  // cancelled); they stay here between picks rather than going back into the
  // heap, and events scheduled at now join them.
  std::vector<HeapEntry> ready_;
  std::vector<ReadyEvent> ready_info_;
  HeapEntry last_run_{0, 0, 0, 0};           // the last event the insertion-order path ran
  TimeNs now_ns_ = 0;
  uint64_t next_sequence_ = 1;
  // The event running now, or the last one that ran: what is done between
  // events (a model checker's injected fault) counts as that event's doing.
  uint64_t running_sequence_ = 0;
  uint64_t processed_ = 0;
  uint64_t live_ = 0;
  // The tie chains' state, made when the first event joins a heap of
  // kTieChainsFrom entries or more without a scheduler (a model checker's
  // executions never make it). One pointer at the end: the queue's other
  // members keep the places they had before chains came.
  struct TieChains {
    std::vector<TieChain> chains;  // by a heap entry's chain; 0 unused
    std::vector<uint32_t> free;
    std::vector<HeapEntry> merge_scratch;
    std::array<RecentHead, size_t{1} << kRecentHeadBits> recent_heads;
    uint64_t waiting = 0;  // entries in the chains from their `next` on, cancelled ones too
  };
  uint64_t waiting_in_chains() const { return ties_ ? ties_->waiting : 0; }
  std::unique_ptr<TieChains> ties_;
};

}  // namespace tensorwire::sim
