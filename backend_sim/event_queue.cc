#include "backend_sim/event_queue.h"

#include <algorithm>
#include <utility>

#include "core/assert.h"

namespace tensorwire::sim {

EventQueue::EventQueue() = default;
EventQueue::~EventQueue() = default;

EventId EventQueue::schedule_at(TimeNs at_ns, uint32_t rank, const char* kind, uint64_t what,
                                EventCallback fn) {
  // Time never goes backwards: every caller schedules at now or later (a
  // delay is clamped at 0 in schedule_after).
  TW_ASSERT_HOT_MSG(at_ns >= now_ns_, "an event scheduled before now");
  TW_ASSERT_HOT(static_cast<bool>(fn));
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  const uint64_t sequence = next_sequence_++;
  Slot& s = slots_[slot];
  s.fn = std::move(fn);
  s.sequence = sequence;
  s.rank = rank;
  s.kind = kind;
  s.what = what;
  s.parent = running_sequence_;
  s.digest_term = 0;
  heap_.push_back({at_ns, sequence, slot});
  std::push_heap(heap_.begin(), heap_.end(), later);
  ++live_;
  if (heap_.size() > 2 * live_ + 1024) drop_cancelled();
  // Every live event has its heap entry, except the ready ones a scheduler is
  // choosing among (a fault it injects in pick() schedules events).
  TW_ASSERT_HOT_MSG(live_ <= heap_.size() + ready_.size(), "every live event has its heap entry");
  return {slot, sequence};
}

void EventQueue::cancel(EventId id) {
  if (!is_pending(id)) return;
  Slot& s = slots_[id.slot];
  s.sequence = 0;  // the heap entry stays; it is dropped when it surfaces
  s.fn.reset();
  TW_ASSERT_HOT(live_ > 0);
  --live_;
}

namespace {

bool is_kind(const char* kind, std::string_view wanted) { return std::string_view(kind) == wanted; }

}  // namespace

std::optional<uint32_t> EventQueue::bring_forward(std::string_view kind) {
  HeapEntry* earliest = nullptr;
  for (HeapEntry& e : heap_) {
    const Slot& slot = slots_[e.slot];
    if (slot.sequence != e.sequence || e.at_ns <= now_ns_ || !is_kind(slot.kind, kind)) continue;
    if (earliest == nullptr || later(*earliest, e)) earliest = &e;
  }
  if (earliest == nullptr) return std::nullopt;
  const uint32_t rank = slots_[earliest->slot].rank;
  earliest->at_ns = now_ns_;
  std::make_heap(heap_.begin(), heap_.end(), later);
  TW_ASSERT(!heap_.empty() && heap_.front().at_ns == now_ns_);
  return rank;
}

bool EventQueue::has_later(std::string_view kind) const {
  for (const HeapEntry& e : heap_) {
    const Slot& slot = slots_[e.slot];
    if (slot.sequence == e.sequence && e.at_ns > now_ns_ && is_kind(slot.kind, kind)) return true;
  }
  return false;
}

bool EventQueue::is_pending(EventId id) const {
  return id.valid() && id.slot < slots_.size() && slots_[id.slot].sequence == id.sequence;
}

// Cancelled events' heap entries wait to surface; when rates are solved
// again often (every flow of a busy port moved at each start and end) they
// outnumber the live ones. Dropping them keeps the order: it is (time,
// sequence), which the live entries carry.
void EventQueue::drop_cancelled() {
  auto cancelled = [this](const HeapEntry& e) { return slots_[e.slot].sequence != e.sequence; };
  for (const HeapEntry& e : heap_) {
    if (cancelled(e)) free_slots_.push_back(e.slot);
  }
  heap_.erase(std::remove_if(heap_.begin(), heap_.end(), cancelled), heap_.end());
  std::make_heap(heap_.begin(), heap_.end(), later);
}

void EventQueue::pop_heap_top() {
  std::pop_heap(heap_.begin(), heap_.end(), later);
  heap_.pop_back();
}

// Pops heap entries until one whose slot is still live; frees cancelled slots.
bool EventQueue::pop_live(HeapEntry& out) {
  while (!heap_.empty()) {
    HeapEntry top = heap_.front();
    pop_heap_top();
    if (slots_[top.slot].sequence == top.sequence) {
      out = top;
      return true;
    }
    // Cancelled: the slot can be reused now that its heap entry is gone.
    free_slots_.push_back(top.slot);
  }
  return false;
}

void EventQueue::run_slot(uint32_t slot) {
  TW_ASSERT_HOT(slot < slots_.size());
  TW_ASSERT_HOT_MSG(slots_[slot].sequence != 0 && static_cast<bool>(slots_[slot].fn),
                "only a live event runs");
  TW_ASSERT_HOT(live_ > 0);
  EventCallback fn = std::move(slots_[slot].fn);
  running_sequence_ = slots_[slot].sequence;
  slots_[slot].sequence = 0;
  free_slots_.push_back(slot);
  --live_;
  ++processed_;
  fn();
}

bool EventQueue::run_next() {
  if (!scheduler_) {
    HeapEntry e;
    if (!pop_live(e)) return false;
    // Without a scheduler events run in (time, sequence) order: never one
    // due earlier than now, never one older than the last at the same time.
    TW_ASSERT_HOT_MSG(e.at_ns >= now_ns_, "an event popped earlier than the last one");
    TW_ASSERT_HOT_MSG(!later(last_run_, e), "events run in (time, sequence) order");
    if constexpr (TENSORWIRE_HOT_ASSERTS) last_run_ = e;  // only that assertion reads it
    now_ns_ = e.at_ns;
    run_slot(e.slot);
    return true;
  }
  // Scheduler path: gather every live event due at the earliest time, let the
  // scheduler pick one, put the rest back (their sequence numbers keep FIFO
  // order for the next round). A scheduler that injected a fault instead of
  // picking (kGatherAgain) gets the ready events gathered afresh.
  for (;;) {
    ready_.clear();
    HeapEntry first;
    if (!pop_live(first)) return false;
    ready_.push_back(first);
    while (!heap_.empty() && heap_.front().at_ns == first.at_ns) {
      HeapEntry e;
      if (!pop_live(e)) break;
      if (e.at_ns != first.at_ns) {
        heap_.push_back(e);
        std::push_heap(heap_.begin(), heap_.end(), later);
        break;
      }
      ready_.push_back(e);
    }
    ready_info_.clear();
    for (const HeapEntry& e : ready_) {
      const Slot& s = slots_[e.slot];
      ready_info_.push_back({e.sequence, s.rank, s.kind, s.parent, e.at_ns});
    }
    // Same-time events may run in any order the scheduler picks; time
    // itself never goes back.
    TW_ASSERT_HOT_MSG(first.at_ns >= now_ns_, "an event popped earlier than the last one");
    now_ns_ = first.at_ns;
    running_sequence_ = Scheduler::kInjectedSequence;
    size_t pick =
        ready_.size() == 1 && !scheduler_->wants_every_event() ? 0 : scheduler_->pick(ready_info_);
    const bool again = pick == Scheduler::kGatherAgain;
    if (pick >= ready_.size()) pick = 0;
    for (size_t i = 0; i < ready_.size(); ++i) {
      if (i == pick && !again) continue;
      heap_.push_back(ready_[i]);
      std::push_heap(heap_.begin(), heap_.end(), later);
    }
    if (again) continue;
    TW_ASSERT_HOT(ready_info_[pick].at_ns == now_ns_);
    scheduler_->ran(ready_info_[pick]);
    run_slot(ready_[pick].slot);
    return true;
  }
}

bool EventQueue::next_time(TimeNs& at_ns) {
  while (!heap_.empty()) {
    const HeapEntry& top = heap_.front();
    if (slots_[top.slot].sequence == top.sequence) {
      at_ns = top.at_ns;
      return true;
    }
    const uint32_t slot = top.slot;
    pop_heap_top();
    free_slots_.push_back(slot);  // a cancelled event's slot
  }
  return false;
}

void EventQueue::set_scheduler(std::unique_ptr<Scheduler> scheduler) {
  scheduler_ = std::move(scheduler);
}

uint64_t EventQueue::digest_term_of(const Slot& slot) {
  StateDigest d;
  d.add(slot.rank).add(std::string_view(slot.kind)).add(slot.what);
  return d.value();
}

uint64_t EventQueue::pending_digest() const {
  uint64_t sum = 0;
  for (const HeapEntry& e : heap_) {
    const Slot& slot = slots_[e.slot];
    if (slot.sequence != e.sequence) continue;  // cancelled
    if (slot.digest_term == 0) slot.digest_term = digest_term_of(slot);
    StateDigest d;
    d.add(slot.digest_term).add(static_cast<uint64_t>(e.at_ns - now_ns_));
    sum += d.value();
  }
  return sum;
}

}  // namespace tensorwire::sim
