#include "backend_sim/event_queue.h"

#include <algorithm>
#include <iterator>
#include <span>
#include <utility>

#include "core/assert.h"

namespace tensorwire::sim {

EventQueue::EventQueue() = default;
EventQueue::~EventQueue() = default;

inline EventQueue::RecentHead& EventQueue::recent_head(TimeNs at_ns) {
  if (!ties_) ties_ = std::make_unique<TieChains>();
  const uint64_t index = (static_cast<uint64_t>(at_ns) * 0x9e3779b97f4a7c15ull) >> (64 - kRecentHeadBits);
  return ties_->recent_heads[index];
}

// Queues an event behind the head the table knows for its time, if it knows
// a live one; if not, the event is to be that time's head (the caller puts
// it in the heap) and the table remembers it.
inline bool EventQueue::join_tie_chain(TimeNs at_ns, uint64_t sequence, uint32_t index) {
  RecentHead& r = recent_head(at_ns);
  if (r.at_ns != at_ns || slot(r.slot).sequence != r.sequence) {
    r.at_ns = at_ns;
    r.slot = index;
    r.sequence = sequence;
    return false;
  }
  const uint32_t pos = heap_pos_[r.slot];
  TW_ASSERT_HOT_MSG(pos != kNotInHeap, "a pending head is in the heap");
  HeapEntry& head = heap_[pos];
  TW_ASSERT_HOT(head.slot == r.slot && head.at_ns == at_ns && head.sequence < sequence);
  if (head.chain == 0) {
    std::vector<TieChain>& chains = ties_->chains;
    if (ties_->free.empty()) {
      if (chains.empty()) chains.emplace_back();  // 0 means none
      head.chain = static_cast<uint32_t>(chains.size());
      chains.emplace_back();
    } else {
      head.chain = ties_->free.back();
      ties_->free.pop_back();
    }
  }
  HeapEntry& e = ties_->chains[head.chain].entries.emplace_back();
  e.at_ns = at_ns;
  e.sequence = sequence;
  e.slot = index;
  ++ties_->waiting;
  return true;
}

EventId EventQueue::add_event(TimeNs at_ns, uint32_t rank, const char* kind, uint64_t what) {
  // Time never goes backwards: every caller schedules at now or later (a
  // delay is clamped at 0 in schedule_after).
  TW_ASSERT_HOT_MSG(at_ns >= now_ns_, "an event scheduled before now");
  uint32_t index;
  if (!free_slots_.empty()) {
    index = free_slots_.back();
    free_slots_.pop_back();
  } else {
    index = slot_count_++;
    if ((index >> kSlotChunkBits) >= slot_chunks_.size()) {
      slot_chunks_.push_back(std::make_unique<Slot[]>(kSlotChunk));
      heap_pos_.resize(slot_chunks_.size() * kSlotChunk, kNotInHeap);
    }
  }
  const uint64_t sequence = next_sequence_++;
  Slot& s = slot(index);
  TW_ASSERT_HOT_MSG(!s.fn, "a free slot holds no callable");
  s.sequence = sequence;
  s.rank = rank;
  s.kind = kind;
  s.what = what;
  s.parent = running_sequence_;
  s.digest_term = 0;
  if (at_ns == now_ns_) {
    // See the header: no heap operation. Its sequence is the largest yet, so
    // it goes last in either list. Field by field: an entry built on the
    // stack and copied whole stalls on store forwarding.
    HeapEntry& e = scheduler_ ? ready_.emplace_back() : now_fifo_.emplace_back();
    e.at_ns = at_ns;
    e.sequence = sequence;
    e.slot = index;
  } else if (scheduler_ || heap_.size() < kTieChainsFrom || !join_tie_chain(at_ns, sequence, index)) {
    heap_insert(at_ns, sequence, index);
  }
  ++live_;
  if (heap_.size() > 2 * live_ + 1024) drop_cancelled();
  // Every live event has its heap or FIFO entry, except the ready ones a
  // scheduler is choosing among (a fault it injects in pick() schedules events).
  TW_ASSERT_HOT_MSG(live_ <= heap_.size() + (now_fifo_.size() - now_head_) + ready_.size() +
                                waiting_in_chains(),
                    "every live event has its heap entry");
  return {index, sequence};
}

void EventQueue::cancel(EventId id) {
  if (!is_pending(id)) return;
  Slot& s = slot(id.slot);
  s.sequence = 0;
  s.fn.reset();
  TW_ASSERT_HOT(live_ > 0);
  --live_;
  // Out of the heap now, so that no dead entry is popped later (a busy port
  // moves every flow's finish event at each start and end). An entry in the
  // FIFO or a scheduler's ready set stays and is dropped when it surfaces.
  // A head with a chain hands its place to the next live event behind it.
  if (const uint32_t pos = heap_pos_[id.slot]; pos != kNotInHeap) {
    if (heap_[pos].chain == 0 || !promote_from_chain(pos)) heap_remove(pos);
    free_slots_.push_back(id.slot);
  }
}

// The head at `pos` was cancelled: the first live event of its chain takes
// its place (the same time, a later sequence: it can only move down). False
// when none is left; the chain is released either way once empty.
[[gnu::noinline]] bool EventQueue::promote_from_chain(size_t pos) {
  const uint32_t c = heap_[pos].chain;
  TW_ASSERT_HOT(ties_ && c != 0 && c < ties_->chains.size());
  TieChain& chain = ties_->chains[c];
  while (chain.next < chain.entries.size()) {
    const HeapEntry e = chain.entries[chain.next++];
    TW_ASSERT_HOT(ties_->waiting > 0);
    --ties_->waiting;
    if (slot(e.slot).sequence != e.sequence) {
      free_slots_.push_back(e.slot);  // cancelled while it waited
      continue;
    }
    RecentHead& r = recent_head(e.at_ns);
    if (r.at_ns == e.at_ns && r.slot == heap_[pos].slot) {
      r.slot = e.slot;
      r.sequence = e.sequence;
    }
    heap_pos_[heap_[pos].slot] = kNotInHeap;
    const bool more = chain.next < chain.entries.size();
    if (!more) release_chain(c);
    place(pos, {e.at_ns, e.sequence, e.slot, more ? c : 0});
    sift_down(pos);
    return true;
  }
  release_chain(c);
  heap_[pos].chain = 0;
  return false;
}

// The head of `c` was popped: its chain is due next, merged with what the
// FIFO holds by sequence (nothing, unless a second head of that time came
// first).
[[gnu::noinline]] void EventQueue::splice_chain(uint32_t c, const HeapEntry& head) {
  TW_ASSERT_HOT_MSG(slot(head.slot).sequence == head.sequence, "a head in the heap is live");
  TieChain& chain = ties_->chains[c];
  TW_ASSERT_HOT(ties_->waiting >= chain.entries.size() - chain.next);
  ties_->waiting -= chain.entries.size() - chain.next;
  if (now_fifo_empty()) {
    now_fifo_.clear();
    std::swap(now_fifo_, chain.entries);
    now_head_ = chain.next;
  } else {
    std::vector<HeapEntry>& merged = ties_->merge_scratch;
    merged.clear();
    std::merge(now_fifo_.begin() + static_cast<std::ptrdiff_t>(now_head_), now_fifo_.end(),
               chain.entries.begin() + static_cast<std::ptrdiff_t>(chain.next), chain.entries.end(),
               std::back_inserter(merged),
               [](const HeapEntry& a, const HeapEntry& b) { return a.sequence < b.sequence; });
    std::swap(now_fifo_, merged);
    now_head_ = 0;
  }
  release_chain(c);
}

void EventQueue::release_chain(uint32_t c) {
  TieChain& chain = ties_->chains[c];
  chain.entries.clear();
  chain.next = 0;
  ties_->free.push_back(c);
}

[[gnu::noinline]] void EventQueue::dissolve_chains() {
  if (!ties_) return;
  std::vector<uint32_t> heads;
  for (size_t pos = 0; pos < heap_.size(); ++pos) {
    if (heap_[pos].chain != 0) heads.push_back(heap_[pos].slot);
  }
  for (uint32_t head : heads) {
    HeapEntry& h = heap_[heap_pos_[head]];
    const uint32_t c = h.chain;
    h.chain = 0;
    TieChain& chain = ties_->chains[c];
    for (size_t i = chain.next; i < chain.entries.size(); ++i) {
      const HeapEntry e = chain.entries[i];
      if (slot(e.slot).sequence == e.sequence) {
        heap_insert(e.at_ns, e.sequence, e.slot);
      } else {
        free_slots_.push_back(e.slot);
      }
    }
    release_chain(c);
  }
  ties_.reset();
}

template <typename F>
void EventQueue::for_each_queued(F&& f) const {
  for (const HeapEntry& e : heap_) {
    f(e);
    if (e.chain == 0) continue;
    const TieChain& chain = ties_->chains[e.chain];
    for (size_t i = chain.next; i < chain.entries.size(); ++i) f(chain.entries[i]);
  }
}

inline void EventQueue::place(size_t pos, const HeapEntry& e) {
  heap_[pos] = e;
  heap_pos_[e.slot] = static_cast<uint32_t>(pos);
}

inline void EventQueue::sift_up(size_t pos) {
  const HeapEntry e = heap_[pos];
  while (pos > 0) {
    const size_t parent = (pos - 1) / kHeapArity;
    if (!later(heap_[parent], e)) break;
    place(pos, heap_[parent]);
    pos = parent;
  }
  place(pos, e);
}

// The earliest of the children from `first` on, in a heap of `n` entries.
inline size_t EventQueue::earliest_child(size_t first, size_t n) const {
  const size_t end = std::min(first + kHeapArity, n);
  size_t child = first;
  for (size_t c = first + 1; c < end; ++c) {
    if (later(heap_[child], heap_[c])) child = c;
  }
  return child;
}

inline void EventQueue::sift_down(size_t pos) {
  const HeapEntry e = heap_[pos];
  const size_t n = heap_.size();
  for (;;) {
    const size_t first = pos * kHeapArity + 1;
    if (first >= n) break;
    const size_t child = earliest_child(first, n);
    if (!later(e, heap_[child])) break;
    place(pos, heap_[child]);
    pos = child;
  }
  place(pos, e);
}

// The entry's place is found first (its parents move down into the hole),
// then its fields are written there: no whole entry built elsewhere and
// copied in.
[[gnu::always_inline]] inline void EventQueue::heap_insert(TimeNs at_ns, uint64_t sequence, uint32_t slot) {
  size_t pos = heap_.size();
  heap_.emplace_back();
  while (pos > 0) {
    const size_t parent = (pos - 1) / kHeapArity;
    const HeapEntry& p = heap_[parent];
    if (key_of(p) < key_of(at_ns, sequence)) break;
    place(pos, p);
    pos = parent;
  }
  HeapEntry& e = heap_[pos];
  e.at_ns = at_ns;
  e.sequence = sequence;
  e.slot = slot;
  e.chain = 0;
  heap_pos_[slot] = static_cast<uint32_t>(pos);
}

inline void EventQueue::heap_remove(size_t pos) {
  TW_ASSERT_HOT(pos < heap_.size());
  heap_pos_[heap_[pos].slot] = kNotInHeap;
  const HeapEntry last = heap_.back();
  heap_.pop_back();
  if (pos == heap_.size()) return;
  place(pos, last);
  if (pos > 0 && later(heap_[(pos - 1) / kHeapArity], last)) {
    sift_up(pos);
  } else {
    sift_down(pos);
  }
}

namespace {

bool is_kind(const char* kind, std::string_view wanted) { return std::string_view(kind) == wanted; }

}  // namespace

std::optional<uint32_t> EventQueue::bring_forward(std::string_view kind) {
  // An event moved out of its time leaves the others of that time behind.
  dissolve_chains();
  HeapEntry* earliest = nullptr;
  for (HeapEntry& e : heap_) {
    const Slot& event = slot(e.slot);
    if (event.sequence != e.sequence || e.at_ns <= now_ns_ || !is_kind(event.kind, kind)) continue;
    if (earliest == nullptr || later(*earliest, e)) earliest = &e;
  }
  if (earliest == nullptr) return std::nullopt;
  const uint32_t rank = slot(earliest->slot).rank;
  earliest->at_ns = now_ns_;  // earlier than before: it can only move up
  sift_up(static_cast<size_t>(earliest - heap_.data()));
  TW_ASSERT(!heap_.empty() && heap_.front().at_ns == now_ns_);
  return rank;
}

bool EventQueue::has_later(std::string_view kind) const {
  bool found = false;
  for_each_queued([&](const HeapEntry& e) {
    const Slot& event = slot(e.slot);
    if (event.sequence == e.sequence && e.at_ns > now_ns_ && is_kind(event.kind, kind)) found = true;
  });
  return found;
}

bool EventQueue::is_pending(EventId id) const {
  return id.valid() && id.slot < slot_count_ && slot(id.slot).sequence == id.sequence;
}

// cancel() takes an event's entry out of the heap, but one a scheduler had
// gathered as ready goes back in dead; should those ever outnumber the live
// ones, they are dropped together. Dropping them keeps the order: it is (time,
// sequence), which the live entries carry.
void EventQueue::drop_cancelled() {
  auto cancelled = [this](const HeapEntry& e) { return slot(e.slot).sequence != e.sequence; };
  for (const HeapEntry& e : heap_) {
    if (!cancelled(e)) continue;
    TW_ASSERT_MSG(e.chain == 0, "a cancelled head handed its chain on");
    heap_pos_[e.slot] = kNotInHeap;
    free_slots_.push_back(e.slot);
  }
  heap_.erase(std::remove_if(heap_.begin(), heap_.end(), cancelled), heap_.end());
  for (size_t pos = 0; pos < heap_.size(); ++pos) place(pos, heap_[pos]);
  for (size_t pos = heap_.size() / kHeapArity + 1; pos-- > 0;) {  // Floyd's heap construction
    if (pos < heap_.size()) sift_down(pos);
  }
}

// The root leaves a large heap bottom-up: the hole it leaves moves down
// along the earliest child to a leaf, comparing children only, and the last
// entry fills it, moving up as far as it must. The last entry came from the
// bottom and seldom moves up: sifting it down from the root instead compares
// it with the earliest child at every level as well (1.2 % of a 256-node
// run's instructions). A heap of a level or two, as in a run of a few ranks,
// gains nothing and keeps the plain sift, inline.
void EventQueue::pop_root_bottom_up() {
  TW_ASSERT_HOT(heap_.size() > kBottomUpFrom);
  heap_pos_[heap_.front().slot] = kNotInHeap;
  const HeapEntry last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  size_t hole = 0;
  for (;;) {
    const size_t first = hole * kHeapArity + 1;
    if (first >= n) break;
    const size_t child = earliest_child(first, n);
    place(hole, heap_[child]);
    hole = child;
  }
  place(hole, last);
  sift_up(hole);
}

inline void EventQueue::pop_heap_top() {
  if (heap_.size() > kBottomUpFrom) {
    pop_root_bottom_up();
  } else {
    heap_remove(0);
  }
}

EventQueue::HeapEntry EventQueue::pop_now_fifo() {
  TW_ASSERT_HOT(!now_fifo_empty());
  const HeapEntry e = now_fifo_[now_head_++];
  TW_ASSERT_HOT_MSG(e.at_ns == now_ns_, "the FIFO holds events due now only");
  if (now_fifo_empty()) {  // keep the capacity: the next instant fills it again
    now_fifo_.clear();
    now_head_ = 0;
  }
  return e;
}

bool EventQueue::run_instant_end_if_due() {
  if (!instant_end_pending_) return false;
  // Drop cancelled events due now: they must not hold the instant open.
  while (!now_fifo_empty() && slot(now_fifo_[now_head_].slot).sequence != now_fifo_[now_head_].sequence) {
    free_slots_.push_back(pop_now_fifo().slot);
  }
  while (!heap_.empty() && heap_.front().at_ns == now_ns_ &&
         slot(heap_.front().slot).sequence != heap_.front().sequence) {
    TW_ASSERT_HOT_MSG(heap_.front().chain == 0, "a cancelled head handed its chain on");
    const uint32_t cancelled = heap_.front().slot;
    pop_heap_top();
    free_slots_.push_back(cancelled);
  }
  if (!now_fifo_empty() || (!heap_.empty() && heap_.front().at_ns == now_ns_)) return false;
  instant_end_pending_ = false;
  instant_end_hook_();
  return true;
}

// Pops entries, in (time, sequence) order across the heap and the FIFO of
// events due now, until one whose slot is still live; frees cancelled slots.
// The instant-end hook runs first once nothing live is due now.
[[gnu::always_inline]] inline bool EventQueue::pop_live(HeapEntry& out) {
  for (;;) {
    if (instant_end_pending_ && run_instant_end_if_due()) continue;
    if (heap_.empty() && now_fifo_empty()) return false;
    HeapEntry top;
    if (next_is_in_heap()) {
      top = heap_.front();
      pop_heap_top();
      // A head is never cancelled in place (cancel promotes), so it runs
      // now and its chain is due with it (splice_chain asserts it is live).
      if (top.chain != 0) splice_chain(top.chain, top);
    } else {
      top = pop_now_fifo();
    }
    if (slot(top.slot).sequence == top.sequence) {
      out = top;
      return true;
    }
    // Cancelled: the slot can be reused now that its heap entry is gone.
    free_slots_.push_back(top.slot);
  }
}

[[gnu::always_inline]] inline void EventQueue::run_slot(uint32_t index) {
  TW_ASSERT_HOT(index < slot_count_);
  Slot& s = slot(index);
  TW_ASSERT_HOT_MSG(s.sequence != 0 && static_cast<bool>(s.fn), "only a live event runs");
  TW_ASSERT_HOT(live_ > 0);
  running_sequence_ = s.sequence;
  s.sequence = 0;  // no longer pending: cancelling it from inside is a no-op
  --live_;
  ++processed_;
  // In place, not moved out: the slot's chunk never moves, and the slot is
  // freed (so reused) only once its callable is done and destroyed.
  s.fn();
  s.fn.reset();
  free_slots_.push_back(index);
}

[[gnu::always_inline]] inline void EventQueue::run_in_order(const HeapEntry& e) {
  // Without a scheduler events run in (time, sequence) order: never one
  // due earlier than now, never one older than the last at the same time.
  TW_ASSERT_HOT_MSG(e.at_ns >= now_ns_, "an event popped earlier than the last one");
  TW_ASSERT_HOT_MSG(!later(last_run_, e), "events run in (time, sequence) order");
  if constexpr (TENSORWIRE_HOT_ASSERTS) last_run_ = e;  // only that assertion reads it
  now_ns_ = e.at_ns;
  run_slot(e.slot);
}

void EventQueue::run_until_empty() {
  HeapEntry e;
  // An event may install a scheduler (none does today): from then on the
  // scheduler's path runs.
  while (!scheduler_ && pop_live(e)) run_in_order(e);
  while (run_next()) {
  }
}

bool EventQueue::run_next() {
  if (!scheduler_) {
    HeapEntry e;
    if (!pop_live(e)) return false;
    run_in_order(e);
    return true;
  }
  // Scheduler path: the scheduler picks one of the live events due at the
  // earliest time (ready_, kept between events in sequence order); the
  // others stay ready for the next pick. A scheduler that injected a fault
  // instead of picking (kGatherAgain) gets the ready events gathered afresh.
  for (;;) {
    if (!gather_ready()) return false;
    ready_info_.clear();
    for (const HeapEntry& e : ready_) {
      const Slot& s = slot(e.slot);
      ready_info_.push_back({e.sequence, s.rank, s.kind, s.parent, e.at_ns});
    }
    // Same-time events may run in any order the scheduler picks; time
    // itself never goes back.
    TW_ASSERT_HOT_MSG(ready_.front().at_ns >= now_ns_, "an event popped earlier than the last one");
    now_ns_ = ready_.front().at_ns;
    running_sequence_ = Scheduler::kInjectedSequence;
    size_t pick = 0;
    if (ready_info_.size() > 1 || scheduler_->wants_every_event()) {
      pick = scheduler_->pick(ready_info_);
    }
    if (pick == Scheduler::kGatherAgain) continue;
    if (pick >= ready_info_.size()) pick = 0;
    // What the pick scheduled at now went after ready_info_'s events.
    TW_ASSERT_HOT(ready_[pick].sequence == ready_info_[pick].sequence);
    TW_ASSERT_HOT(ready_info_[pick].at_ns == now_ns_);
    const uint32_t picked = ready_[pick].slot;
    ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(pick));
    scheduler_->ran(ready_info_[pick]);
    run_slot(picked);
    return true;
  }
}

// ready_ made every live event due at the earliest time, in sequence order:
// its cancelled entries dropped (their slots freed), the heap's earliest
// entries taken when it is empty, and heap entries due at that time merged
// in (an event brought forward; entries queued before the scheduler came).
bool EventQueue::gather_ready() {
  size_t kept = 0;
  for (const HeapEntry& e : ready_) {
    if (slot(e.slot).sequence == e.sequence) {
      ready_[kept++] = e;
    } else {
      free_slots_.push_back(e.slot);
    }
  }
  ready_.resize(kept);
  if (ready_.empty()) {
    HeapEntry first;
    if (!pop_live(first)) return false;
    ready_.push_back(first);
  }
  const TimeNs at_ns = ready_.front().at_ns;
  while (!heap_.empty() && heap_.front().at_ns == at_ns) {
    HeapEntry e;
    if (!pop_live(e)) break;
    if (e.at_ns != at_ns) {
      heap_insert(e.at_ns, e.sequence, e.slot);
      break;
    }
    auto at = std::upper_bound(ready_.begin(), ready_.end(), e,
                               [](const HeapEntry& a, const HeapEntry& b) { return a.sequence < b.sequence; });
    ready_.insert(at, e);
  }
  return true;
}

bool EventQueue::next_time(TimeNs& at_ns) {
  run_instant_end_if_due();
  for (const HeapEntry& e : ready_) {
    if (slot(e.slot).sequence == e.sequence) {
      at_ns = now_ns_;  // ready events are due now
      return true;
    }
  }
  while (!now_fifo_empty()) {
    const HeapEntry& front = now_fifo_[now_head_];
    if (slot(front.slot).sequence == front.sequence) {
      at_ns = now_ns_;  // nothing in the heap is due earlier than now
      return true;
    }
    free_slots_.push_back(pop_now_fifo().slot);  // a cancelled event's slot
  }
  while (!heap_.empty()) {
    const HeapEntry& top = heap_.front();
    if (slot(top.slot).sequence == top.sequence) {
      at_ns = top.at_ns;
      return true;
    }
    TW_ASSERT_HOT_MSG(top.chain == 0, "a cancelled head handed its chain on");
    const uint32_t slot = top.slot;
    pop_heap_top();
    free_slots_.push_back(slot);  // a cancelled event's slot
  }
  return false;
}

void EventQueue::set_scheduler(std::unique_ptr<Scheduler> scheduler) {
  // The scheduler path gathers ready events from the heap alone.
  dissolve_chains();
  while (!now_fifo_empty()) {
    const HeapEntry e = pop_now_fifo();
    heap_insert(e.at_ns, e.sequence, e.slot);
  }
  scheduler_ = std::move(scheduler);
  used_kinds_ = scheduler_ ? scheduler_->used_kinds() : 0;
}

uint64_t EventQueue::digest_term_of(const Slot& slot) {
  StateDigest d;
  d.add(slot.rank).add(std::string_view(slot.kind)).add(slot.what);
  return d.value();
}

uint64_t EventQueue::pending_digest() const {
  TW_ASSERT_MSG(state_digests_, "pending events are digested only where state digests are on");
  uint64_t sum = 0;
  // Inside a pick the events being chosen among count too, due in 0: two
  // states that differ only in what is ready now are different states (what
  // can run next differs). They were once left out, as the choice rather
  // than the state, which merged such states in dfs's cache.
  auto add = [&](const HeapEntry& e) {
    const Slot& event = slot(e.slot);
    if (event.sequence != e.sequence) return;  // cancelled
    if (event.digest_term == 0) event.digest_term = digest_term_of(event);
    StateDigest d;
    d.add(event.digest_term).add(static_cast<uint64_t>(e.at_ns - now_ns_));
    sum += d.value();
  };
  for_each_queued(add);
  for (const HeapEntry& e : std::span<const HeapEntry>(now_fifo_).subspan(now_head_)) add(e);
  for (const HeapEntry& e : ready_) add(e);
  return sum;
}

}  // namespace tensorwire::sim
