// The event loop: time order, tie-breaking by scheduler, timers, determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <set>
#include <utility>
#include <vector>
#include <memory>
#include <optional>
#include <string>

#include "backend_sim/event_queue.h"
#include "backend_sim/scheduler.h"
#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

// xorshift64 from a seed: next(bound) draws from [0, bound).
class SeededDraw {
 public:
  explicit SeededDraw(uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ull) {}
  uint64_t operator()(uint64_t bound) {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_ % bound;
  }

 private:
  uint64_t state_;
};

TEST(EventQueue, RunsByTimeThenInsertionOrder) {
  EventQueue q;
  std::string order;
  q.schedule_at(20, 0, "t", [&] { order += "c"; });
  q.schedule_at(10, 0, "t", [&] { order += "a"; });
  q.schedule_at(10, 0, "t", [&] { order += "b"; });
  while (q.run_next()) {
  }
  EXPECT_EQ(order, "abc");
  EXPECT_EQ(q.now_ns(), 20);
  EXPECT_EQ(q.processed(), 3u);
}

// Events due now go to a FIFO beside the heap: those the heap already holds
// for now (scheduled before time got there) still run first, then the ones
// scheduled at now in insertion order, before anything later; a cancelled one
// in the FIFO is skipped, and the running event may cancel, schedule and be
// cancelled itself without harm.
TEST(EventQueue, EventsDueNowRunAfterTheHeapsOnesForNowAndBeforeLaterOnes) {
  EventQueue q;
  std::string order;
  EventId doomed;
  EventId self;
  q.schedule_at(20, 0, "t", [&] { order += "z"; });
  self = q.schedule_at(10, 0, "t", [&] {
    order += "a";
    q.cancel(self);  // the running event: a no-op
    q.schedule_at(10, 0, "t", [&] {
      order += "d";
      q.schedule_after(0, 0, "t", [&] { order += "f"; });
    });
    doomed = q.schedule_at(10, 0, "t", [&] { order += "X"; });
    q.schedule_at(10, 0, "t", [&] { order += "e"; });
    q.schedule_at(11, 0, "t", [&] { order += "y"; });
  });
  q.schedule_at(10, 0, "t", [&] {
    order += "b";
    q.cancel(doomed);
  });
  q.schedule_at(10, 0, "t", [&] { order += "c"; });
  q.run_next();
  EXPECT_EQ(order, "a");
  TimeNs next = -1;
  ASSERT_TRUE(q.next_time(next));
  EXPECT_EQ(next, 10);
  while (q.run_next()) {
  }
  EXPECT_EQ(order, "abcdefyz");
  EXPECT_EQ(q.processed(), 8u);
  EXPECT_TRUE(q.empty());
}

// The order events ran in, as (time, sequence), for a seeded mix of
// schedules (some due now), cancels, instant-end requests and, when
// `install_scheduler_at` > 0, a scheduler that the event of that number
// installs mid-run; drained by run_until_empty() or by run_next() in a loop.
std::vector<std::pair<TimeNs, uint64_t>> drained_order(uint64_t seed, bool until_empty,
                                                       int install_scheduler_at) {
  struct FirstReady final : Scheduler {
    size_t pick(std::span<const ReadyEvent> /*ready*/) override { return 0; }
  };
  EventQueue q;
  SeededDraw next(seed);
  std::vector<EventId> ids;
  std::vector<std::pair<TimeNs, uint64_t>> ran;
  int count = 0;
  bool hook_on = install_scheduler_at == 0;
  if (hook_on) {
    q.set_instant_end_hook([&] {
      if (next(2) == 0) q.schedule_after(0, 0, "t", [&] { ran.emplace_back(q.now_ns(), 0); });
    });
  }
  std::function<void(int)> add = [&](int depth) {
    const TimeNs at = q.now_ns() + (next(3) == 0 ? 0 : static_cast<TimeNs>(next(40)));
    auto sequence = std::make_shared<uint64_t>(0);
    ids.push_back(q.schedule_at(at, 0, "t", [&, depth, sequence] {
      ran.emplace_back(q.now_ns(), *sequence);
      if (++count == install_scheduler_at) {
        q.set_scheduler(std::make_unique<FirstReady>());
        hook_on = false;
      }
      for (uint64_t k = depth < 3 ? next(3) : 0; k > 0; --k) add(depth + 1);
      if (next(3) == 0) q.cancel(ids[next(ids.size())]);
      if (hook_on && next(4) == 0) q.request_instant_end();
    }));
    *sequence = ids.back().sequence;
  };
  for (int i = 0; i < 150; ++i) add(0);
  for (int i = 0; i < 40; ++i) q.cancel(ids[next(ids.size())]);
  if (until_empty) {
    q.run_until_empty();
  } else {
    while (q.run_next()) {
    }
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.processed(), ran.size());
  return ran;
}

// Simulator::run drains the queue with run_until_empty(), whose loop keeps
// the pop and the run inline: the same events in the same order as
// run_next() called until it returns false, with instant-end hooks, and
// with a scheduler installed by an event partway.
TEST(EventQueue, RunUntilEmptyRunsWhatRunNextRunsInItsOrder) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    for (int install_at : {0, 37}) {
      const auto by_run_next = drained_order(seed, false, install_at);
      EXPECT_GT(by_run_next.size(), 150u) << "seed " << seed;
      EXPECT_EQ(drained_order(seed, true, install_at), by_run_next)
          << "seed " << seed << ", scheduler installed at event " << install_at;
    }
  }
}

// Random schedules and cancels, some from inside running events, against a
// plain reference: the events that run are exactly the ones never cancelled,
// in (time, sequence) order, however the heap took the cancelled ones out.
TEST(EventQueue, RandomSchedulesAndCancelsRunInTimeThenSequenceOrder) {
  using Key = std::pair<TimeNs, uint64_t>;  // (time, sequence)
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    EventQueue q;
    SeededDraw next(seed);
    std::vector<EventId> ids;
    std::vector<Key> scheduled;
    std::set<uint64_t> cancelled;
    std::vector<Key> ran;
    auto cancel_one = [&] {
      const EventId id = ids[next(ids.size())];
      if (q.is_pending(id)) cancelled.insert(id.sequence);
      q.cancel(id);
    };
    std::function<void(int)> add = [&](int depth) {
      const TimeNs at = q.now_ns() + (next(4) == 0 ? 0 : static_cast<TimeNs>(next(50)));
      auto sequence = std::make_shared<uint64_t>(0);
      const EventId id = q.schedule_at(at, 0, "t", [&, at, depth, sequence] {
        ran.emplace_back(at, *sequence);
        EXPECT_EQ(q.now_ns(), at);
        for (uint64_t k = depth < 3 ? next(3) : 0; k > 0; --k) add(depth + 1);
        if (next(3) == 0) cancel_one();
      });
      *sequence = id.sequence;
      ids.push_back(id);
      scheduled.emplace_back(at, id.sequence);
    };
    for (int i = 0; i < 200; ++i) add(0);
    for (int i = 0; i < 60; ++i) cancel_one();
    while (q.run_next()) {
    }
    std::vector<Key> expected;
    for (const Key& k : scheduled) {
      if (!cancelled.count(k.second)) expected.push_back(k);
    }
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(ran, expected) << "seed " << seed;
    EXPECT_FALSE(cancelled.empty());
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.processed(), ran.size());
  }
}

// Events due at one future time wait behind the first in its tie chain.
// Many events on few times, and more distinct times than the table of
// recent heads holds (so that one time gets a second head, whose chain is
// merged with the first's by sequence), with cancels that hit heads, whole
// times and chained events: against the plain reference, exactly the events
// never cancelled run, in (time, sequence) order, each at its time.
TEST(EventQueue, EventsSharingATimeRunInSequenceOrderWhateverIsCancelled) {
  using Key = std::pair<TimeNs, uint64_t>;  // (time, sequence)
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    EventQueue q;
    SeededDraw next(seed);
    std::vector<EventId> ids;
    std::vector<Key> scheduled;
    std::set<uint64_t> cancelled;
    std::vector<Key> ran;
    // Odd seeds: 4 times, the chains long; even seeds: 2,000 times, the
    // table of 256 recent heads overrun.
    const uint64_t times = seed % 2 == 1 ? 4 : 2000;
    auto cancel = [&](const EventId& id) {
      if (q.is_pending(id)) cancelled.insert(id.sequence);
      q.cancel(id);
    };
    std::function<void(int)> add = [&](int depth) {
      const TimeNs at = q.now_ns() + static_cast<TimeNs>(next(times)) * 10;
      auto sequence = std::make_shared<uint64_t>(0);
      const EventId id = q.schedule_at(at, 0, "t", [&, at, depth, sequence] {
        ran.emplace_back(at, *sequence);
        EXPECT_EQ(q.now_ns(), at);
        for (uint64_t k = depth < 2 ? next(3) : 0; k > 0; --k) add(depth + 1);
        if (next(2) == 0) cancel(ids[next(ids.size())]);
      });
      *sequence = id.sequence;
      ids.push_back(id);
      scheduled.emplace_back(at, id.sequence);
    };
    for (int i = 0; i < 3000; ++i) add(0);
    // Every event of a few times, from the first (the head) on, and some
    // drawn anywhere.
    for (size_t i = 0; i < ids.size(); ++i) {
      if (scheduled[i].first % 70 == 0) cancel(ids[i]);
    }
    for (int i = 0; i < 500; ++i) cancel(ids[next(ids.size())]);
    while (q.run_next()) {
    }
    std::vector<Key> expected;
    for (const Key& k : scheduled) {
      if (!cancelled.count(k.second)) expected.push_back(k);
    }
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(ran, expected) << "seed " << seed;
    EXPECT_GT(cancelled.size(), 500u);
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.processed(), ran.size());
  }
}

// A scheduler installed while events wait in tie chains is offered each of
// them, in sequence order among those of its time.
TEST(EventQueue, InstallingASchedulerOffersTheEventsThatWaitedInTieChains) {
  EventQueue q;
  std::vector<int> ran;
  for (int i = 0; i < 6; ++i) {
    q.schedule_at(i % 2 == 0 ? 10 : 20, 0, "t", [&ran, i] { ran.push_back(i); });
  }
  const EventId cancelled = q.schedule_at(10, 0, "t", [&ran] { ran.push_back(99); });
  q.cancel(cancelled);
  q.set_scheduler(std::make_unique<FifoScheduler>());
  while (q.run_next()) {
  }
  EXPECT_EQ(ran, (std::vector<int>{0, 2, 4, 1, 3, 5}));
  EXPECT_TRUE(q.empty());
}

// The same schedule with a scheduler installed half-way: the FIFO's events
// move to the heap and keep their order.
TEST(EventQueue, TheInstantEndHookRunsOnceAfterEveryEventDueNowAndBeforeTimeMovesOn) {
  EventQueue q;
  std::vector<std::string> order;
  int hooks = 0;
  q.set_instant_end_hook([&] {
    ++hooks;
    order.push_back("end@" + std::to_string(q.now_ns()));
    // What the hook schedules for now runs before time moves on.
    if (hooks == 1) q.schedule_after(0, 0, "t", [&] { order.push_back("after-hook"); });
  });
  q.schedule_at(10, 0, "t", [&] {
    order.push_back("a");
    q.request_instant_end();
    q.request_instant_end();  // the same request
    q.schedule_after(0, 0, "t", [&] { order.push_back("c"); });  // due now: still this instant
  });
  q.schedule_at(10, 0, "t", [&] { order.push_back("b"); });
  const EventId cancelled = q.schedule_at(10, 0, "t", [&] { order.push_back("never"); });
  q.schedule_at(20, 0, "t", [&] { order.push_back("d"); });
  q.cancel(cancelled);  // a cancelled event due now does not hold the instant open
  while (q.run_next()) {
  }
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "c", "end@10", "after-hook", "d"}));
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(q.processed(), 5u);  // the hook is not an event
}

TEST(EventQueue, APendingInstantEndCountsAsWorkForNextTimeAndEmpty) {
  EventQueue q;
  bool ran = false;
  q.set_instant_end_hook([&] {
    ran = true;
    q.schedule_after(5, 1, "t", [] {});
  });
  q.schedule_at(3, 0, "t", [&] { q.request_instant_end(); });
  ASSERT_TRUE(q.run_next());
  EXPECT_FALSE(q.empty());  // nothing queued, but the hook is owed
  TimeNs next = 0;
  ASSERT_TRUE(q.next_time(next));  // runs the hook first: it is due at the instant's end
  EXPECT_TRUE(ran);
  EXPECT_EQ(next, 8);
  ASSERT_TRUE(q.run_next());
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, InstallingASchedulerKeepsTheEventsDueNowInOrder) {
  EventQueue q;
  std::string order;
  q.schedule_at(5, 0, "t", [&] {
    order += "a";
    q.schedule_at(5, 0, "t", [&] { order += "b"; });
    q.schedule_at(5, 0, "t", [&] { order += "c"; });
    q.schedule_at(6, 0, "t", [&] { order += "d"; });
  });
  ASSERT_TRUE(q.run_next());
  q.set_scheduler(std::make_unique<FifoScheduler>());
  while (q.run_next()) {
  }
  EXPECT_EQ(order, "abcd");
  EXPECT_EQ(q.processed(), 4u);
}

// Callables of every size run: small ones inline, large ones on the heap;
// move-only captures work, and a cancelled event's capture is released.
TEST(EventQueue, RunsLargeAndMoveOnlyCallablesAndReleasesCancelledOnes) {
  EventQueue q;
  std::array<uint64_t, 16> big{};
  big[15] = 7;
  uint64_t seen = 0;
  q.schedule_at(1, 0, "t", [big, &seen] { seen += big[15]; });  // 128 B: over the inline buffer
  auto owned = std::make_unique<int>(5);
  q.schedule_at(2, 0, "t", [p = std::move(owned), &seen] { seen += static_cast<uint64_t>(*p); });
  auto shared = std::make_shared<int>(1);
  const EventId id = q.schedule_at(3, 0, "t", [shared] { ADD_FAILURE() << "cancelled event ran"; });
  EXPECT_EQ(shared.use_count(), 2);
  q.cancel(id);
  EXPECT_EQ(shared.use_count(), 1);
  while (q.run_next()) {
  }
  EXPECT_EQ(seen, 12u);
  EXPECT_EQ(q.processed(), 2u);
}

TEST(EventQueue, CancelledEventsNeverRunAndAreNotCounted) {
  EventQueue q;
  int ran = 0;
  EventId id = q.schedule_at(5, 0, "t", [&] { ++ran; });
  q.schedule_at(6, 0, "t", [&] { ++ran; });
  q.cancel(id);
  q.cancel(id);  // twice: no-op
  while (q.run_next()) {
  }
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(q.processed(), 1u);
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, BringForwardMovesTheEarliestLaterEventOfAKindToNowKeepingItsId) {
  EventQueue q;
  std::string order;
  q.schedule_at(0, 0, "step", [&] { order += "s"; });
  EventId late = q.schedule_at(50, 2, "timeout", [&] { order += "L"; });
  q.schedule_at(30, 1, "timeout", [&] { order += "E"; });
  q.schedule_at(40, 0, "other", [&] { order += "o"; });
  ASSERT_TRUE(q.run_next());  // "s" at 0
  EXPECT_TRUE(q.has_later("timeout"));
  EXPECT_FALSE(q.has_later("step"));
  EXPECT_EQ(q.bring_forward("timeout"), std::optional<uint32_t>(1));  // the one due at 30
  ASSERT_TRUE(q.run_next());
  EXPECT_EQ(order, "sE");
  EXPECT_EQ(q.now_ns(), 0);  // it ran now, not at 30
  EXPECT_EQ(q.bring_forward("timeout"), std::optional<uint32_t>(2));
  q.cancel(late);  // the id still names it
  EXPECT_FALSE(q.has_later("timeout"));
  EXPECT_EQ(q.bring_forward("timeout"), std::nullopt);
  while (q.run_next()) {
  }
  EXPECT_EQ(order, "sEo");
}

class LastFirst final : public Scheduler {
 public:
  size_t pick(std::span<const ReadyEvent> ready) override {
    offered = std::max(offered, ready.size());
    return ready.size() - 1;
  }
  size_t offered = 0;
};

TEST(EventQueue, SchedulerPicksAmongSameTimeEventsOnly) {
  EventQueue q;
  auto sched = std::make_unique<LastFirst>();
  LastFirst* s = sched.get();
  q.set_scheduler(std::move(sched));
  std::string order;
  q.schedule_at(10, 0, "t", [&] { order += "a"; });
  q.schedule_at(10, 1, "t", [&] { order += "b"; });
  q.schedule_at(10, 2, "t", [&] { order += "c"; });
  q.schedule_at(30, 0, "t", [&] { order += "z"; });
  while (q.run_next()) {
  }
  EXPECT_EQ(order, "cbaz");
  EXPECT_EQ(s->offered, 3u);
}

// Records the kinds of shared object it is told of; takes `kinds` (by
// default every kind, as sim::Scheduler does).
class UseRecorder final : public Scheduler {
 public:
  explicit UseRecorder(std::optional<uint32_t> kinds) : kinds_(kinds) {}
  size_t pick(std::span<const ReadyEvent>) override { return 0; }
  void used(const SharedObject& object) override { seen.push_back(object.kind); }
  uint32_t used_kinds() const override { return kinds_ ? *kinds_ : Scheduler::used_kinds(); }
  std::vector<SharedObject::Kind> seen;

 private:
  std::optional<uint32_t> kinds_;
};

// Every kind of use, in Kind order, reported by one event.
std::vector<SharedObject::Kind> uses_seen_by(std::optional<uint32_t> kinds) {
  EventQueue q;
  auto sched = std::make_unique<UseRecorder>(kinds);
  UseRecorder* s = sched.get();
  q.set_scheduler(std::move(sched));
  q.schedule_at(5, 0, "t", [&] {
    q.touch(1);
    q.use(SharedObject::send_queue(0, 1));
    q.use(SharedObject::memory(0, 4096, 64));
    q.use(SharedObject::cpu(0));
    q.use(SharedObject::queue_pair(0, 1));
  });
  while (q.run_next()) {
  }
  return s->seen;
}

TEST(EventQueue, ASchedulerIsToldOfTheKindsOfUseItTakesOnly) {
  using K = SharedObject::Kind;
  EXPECT_EQ(uses_seen_by(std::nullopt),
            (std::vector<K>{K::kRank, K::kSendQueue, K::kMemory, K::kCpu, K::kQueuePair}));
  EXPECT_EQ(uses_seen_by(Scheduler::kind_bit(K::kRank) | Scheduler::kind_bit(K::kQueuePair)),
            (std::vector<K>{K::kRank, K::kQueuePair}));
  EXPECT_EQ(uses_seen_by(0), std::vector<K>{});
  // Without a scheduler nothing is told, and an event's `what` is not hashed.
  EventQueue plain;
  plain.use(SharedObject::cpu(0));
  EXPECT_EQ(plain.what(1, 2, 3), 0u);
}

TEST(EventQueue, AWhatIsHashedOnlyWhereStateDigestsAreOn) {
  EventQueue q;
  q.set_scheduler(std::make_unique<UseRecorder>(std::nullopt));
  const uint64_t on = q.what(1, 2, 3);
  EXPECT_NE(on, 0u);
  EXPECT_NE(q.what(1, 2, 4), on);
  q.set_state_digests(false);
  EXPECT_EQ(q.what(1, 2, 3), 0u);
}

// A scheduler that asks for every event (as a model checker offering a
// fault does) and digests what is pending at each of its choices.
class DigestAtEveryChoice final : public Scheduler {
 public:
  explicit DigestAtEveryChoice(EventQueue& q) : q_(q) {}
  size_t pick(std::span<const ReadyEvent> ready) override {
    digests.push_back(q_.pending_digest());
    ready_counts.push_back(ready.size());
    return 0;
  }
  bool wants_every_event() const override { return true; }
  std::vector<uint64_t> digests;
  std::vector<size_t> ready_counts;

 private:
  EventQueue& q_;
};

// Two choice points whose only difference is what is ready: "x" ran and
// changed nothing else, so only "y" is left. What can run next differs, so
// the states must digest apart: a model checker's cache that took them for
// one state would cut the second as explored, and lose its orders.
TEST(EventQueue, ChoicePointsThatDifferOnlyInWhatIsReadyDigestApart) {
  EventQueue q;
  auto sched = std::make_unique<DigestAtEveryChoice>(q);
  DigestAtEveryChoice* s = sched.get();
  q.set_scheduler(std::move(sched));
  q.schedule_at(5, 0, "x", q.what(1), [] {});
  q.schedule_at(5, 1, "y", q.what(2), [] {});
  q.schedule_at(9, 1, "later", q.what(3), [] {});
  while (q.run_next()) {
  }
  ASSERT_EQ(s->ready_counts, (std::vector<size_t>{2, 1, 1}));
  EXPECT_NE(s->digests[0], s->digests[1]) << "{x, y} ready and {y} ready are different states";
}

// A scheduler that, at its first choice, cancels every other ready event:
// those go back to the heap dead, and past 1024 of them the queue drops them
// all at once (drop_cancelled) and rebuilds its heap.
class CancelOthersOnce final : public Scheduler {
 public:
  explicit CancelOthersOnce(EventQueue& q) : q_(q) {}
  size_t pick(std::span<const ReadyEvent> ready) override {
    if (!done_) {
      done_ = true;
      for (EventId id : to_cancel) q_.cancel(id);
    }
    (void)ready;
    return 0;
  }
  std::vector<EventId> to_cancel;

 private:
  EventQueue& q_;
  bool done_ = false;
};

TEST(EventQueue, ManyDeadReadyEventsAreDroppedTogetherAndTheRestRunInOrder) {
  EventQueue q;
  auto sched = std::make_unique<CancelOthersOnce>(q);
  CancelOthersOnce* s = sched.get();
  q.set_scheduler(std::move(sched));
  std::vector<int> ran;
  std::vector<EventId> cancelled;
  for (int i = 0; i < 1500; ++i) {
    const EventId id = q.schedule_at(10, 0, "t", [&ran, i] { ran.push_back(i); });
    if (i > 0) cancelled.push_back(id);
  }
  s->to_cancel = cancelled;
  // Later events, some scheduled by the first: the first of them finds the
  // heap holding 1,499 dead entries and drops them.
  for (int i = 0; i < 40; ++i) q.schedule_at(20 + i % 7, 0, "t", [&ran, i] { ran.push_back(10000 + i); });
  ASSERT_TRUE(q.run_next());
  q.schedule_at(25, 0, "t", [&ran] { ran.push_back(99999); });
  while (q.run_next()) {
  }
  for (EventId id : cancelled) EXPECT_FALSE(q.is_pending(id));
  // Event 0, then the later ones by (time, sequence): times 20..26, each
  // time in scheduling order, the one scheduled last at 25 after the others there.
  std::vector<int> expected{0};
  for (int t = 20; t <= 26; ++t) {
    for (int i = 0; i < 40; ++i) {
      if (20 + i % 7 == t) expected.push_back(10000 + i);
    }
    if (t == 25) expected.push_back(99999);
  }
  EXPECT_EQ(ran, expected);
  EXPECT_EQ(q.processed(), expected.size());
}

// A scheduler that picks by a seeded draw and checks each offer against a
// plain model of what is pending: exactly the live events due at the
// earliest time, in sequence order, whatever was scheduled at now, cancelled
// or brought forward between picks.
class CheckedRandomPick final : public Scheduler {
 public:
  CheckedRandomPick(const std::set<std::pair<TimeNs, uint64_t>>& live, uint64_t seed)
      : live_(live), state_(seed) {}
  size_t pick(std::span<const ReadyEvent> ready) override {
    std::vector<uint64_t> expected;
    const TimeNs earliest = live_.begin()->first;
    for (const auto& [at, sequence] : live_) {
      if (at == earliest) expected.push_back(sequence);
    }
    std::vector<uint64_t> offered;
    for (const ReadyEvent& e : ready) {
      EXPECT_EQ(e.at_ns, earliest);
      offered.push_back(e.sequence);
    }
    EXPECT_EQ(offered, expected);
    picks += ready.size() > 1 ? 1 : 0;
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>((state_ >> 33) % ready.size());
  }
  bool wants_every_event() const override { return true; }
  uint64_t picks = 0;  // among two or more

 private:
  const std::set<std::pair<TimeNs, uint64_t>>& live_;
  uint64_t state_;
};

TEST(EventQueue, ASchedulerIsOfferedExactlyTheLiveEventsDueFirstInSequenceOrder) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    EventQueue q;
    std::set<std::pair<TimeNs, uint64_t>> live;  // (time, sequence)
    std::set<std::pair<TimeNs, uint64_t>> late;  // the live ones of kind "late"
    auto sched = std::make_unique<CheckedRandomPick>(live, seed);
    CheckedRandomPick* s = sched.get();
    q.set_scheduler(std::move(sched));
    SeededDraw next(seed);
    std::vector<EventId> ids;
    auto forget = [&](uint64_t sequence) {
      for (auto* set : {&live, &late}) {
        std::erase_if(*set, [sequence](const auto& e) { return e.second == sequence; });
      }
    };
    uint64_t ran = 0;
    std::function<void(int)> add = [&](int depth) {
      const TimeNs at = q.now_ns() + (next(3) == 0 ? 0 : static_cast<TimeNs>(next(20)));
      const bool is_late = next(4) == 0;
      auto self = std::make_shared<uint64_t>(0);
      const EventId id = q.schedule_at(at, 0, is_late ? "late" : "t", [&, depth, self] {
        forget(*self);
        ++ran;
        for (uint64_t k = depth < 4 ? next(3) : 0; k > 0; --k) add(depth + 1);
        if (next(3) == 0) {
          const EventId victim = ids[next(ids.size())];
          if (q.is_pending(victim)) forget(victim.sequence);
          q.cancel(victim);
        }
      });
      *self = id.sequence;
      ids.push_back(id);
      live.emplace(at, id.sequence);
      if (is_late) late.emplace(at, id.sequence);
    };
    for (int i = 0; i < 100; ++i) add(0);
    while (!live.empty()) {
      if (next(6) == 0) {
        // A model checker's timeout fired early: the earliest "late" event
        // due after now moves to now and is offered in its sequence's place.
        auto later = std::find_if(late.begin(), late.end(),
                                  [&](const auto& e) { return e.first > q.now_ns(); });
        const std::optional<uint32_t> moved = q.bring_forward("late");
        ASSERT_EQ(moved.has_value(), later != late.end());
        if (moved) {
          const auto [at, sequence] = *later;
          late.erase(later);
          late.emplace(q.now_ns(), sequence);
          live.erase({at, sequence});
          live.emplace(q.now_ns(), sequence);
        }
      }
      const uint64_t before = ran;
      ASSERT_TRUE(q.run_next()) << "seed " << seed;
      ASSERT_EQ(ran, before + 1);
    }
    EXPECT_FALSE(q.run_next());
    EXPECT_TRUE(q.empty());
    EXPECT_GT(s->picks, 20u) << "seed " << seed;
  }
}

TEST(SimClock, TimersFireAtTheirTimeAndCancelWorks) {
  Cluster c;
  SimFixture f(c);
  Clock& clock = f.env(0).clock;
  std::vector<TimeNs> fired;
  clock.schedule_after(500, [&] { fired.push_back(clock.now_ns()); });
  TimerId cancelled = clock.schedule_after(200, [&] { fired.push_back(-1); });
  clock.schedule_after(100, [&] { fired.push_back(clock.now_ns()); });
  clock.cancel(cancelled);
  f.sim().run();
  EXPECT_EQ(fired, (std::vector<TimeNs>{100, 500}));
  clock.cancel(cancelled);  // after firing time: no-op
}

// A timer's id names its event's slot and sequence: once it fired, its slot
// serves a later timer, and cancelling the first (again) leaves that one alone.
TEST(SimClock, CancellingAFiredTimerSparesTheTimerThatReusedItsSlot) {
  Cluster c;
  SimFixture f(c);
  Clock& clock = f.env(0).clock;
  std::vector<std::string> fired;
  const TimerId first = clock.schedule_after(100, [&] { fired.push_back("first"); });
  f.sim().run();
  const TimerId second = clock.schedule_after(100, [&] { fired.push_back("second"); });
  EXPECT_NE(first.value, second.value);
  clock.cancel(first);
  f.sim().run();
  EXPECT_EQ(fired, (std::vector<std::string>{"first", "second"}));
  // Cancelled, then its slot reused: cancelling it again spares the new one.
  const TimerId third = clock.schedule_after(100, [&] { fired.push_back("third"); });
  clock.cancel(third);
  f.sim().run();
  const TimerId fourth = clock.schedule_after(100, [&] { fired.push_back("fourth"); });
  clock.cancel(third);
  clock.cancel(TimerId{});  // no timer: a no-op
  f.sim().run();
  EXPECT_EQ(fired, (std::vector<std::string>{"first", "second", "fourth"}));
  clock.cancel(fourth);  // fired: a no-op
}

TEST(Simulator, RunUntilStopsAtTheGivenTime) {
  Cluster c;
  SimFixture f(c);
  int ran = 0;
  f.env(0).clock.schedule_after(1000, [&] { ++ran; });
  f.env(0).clock.schedule_after(3000, [&] { ++ran; });
  f.sim().run_until(2000);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(f.sim().now_ns(), 2000);
  EXPECT_FALSE(f.sim().idle());
  f.sim().run();
  EXPECT_EQ(ran, 2);
  EXPECT_TRUE(f.sim().idle());
}

// The same operations twice give the same trace, byte for byte.
std::string traced_run() {
  RecordingTraceSink trace;
  Cluster c;
  c.nodes = 4;
  SimFixture f(c, true, &trace);
  const Access rw = Access::kLocalWrite | Access::kRemoteWrite;
  std::vector<MemoryRegion> bufs;
  for (RankId r = 0; r < 4; ++r) bufs.push_back(f.region(r, 1 << 16, rw));
  for (RankId r = 0; r < 4; ++r) {
    for (RankId p = 0; p < 4; ++p) {
      if (p == r) continue;
      EXPECT_TRUE(f.recv(p, r, bufs[p], 0, r).is_ok());
      EXPECT_TRUE(f.write(r, p, bufs[r], bufs[p], 1000u * (r + 1) * (p + 2), r * 10 + p, true, r).is_ok());
    }
  }
  f.sim().run();
  return trace.log;
}

TEST(Simulator, SameOperationsGiveAByteIdenticalTrace) {
  const std::string a = traced_run();
  const std::string b = traced_run();
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST(Simulator, RejectsAConfigurationItCannotRun) {
  NullTraceSink t;
  Cluster c;
  c.nic_bandwidth_bytes_per_s = 0;
  EXPECT_THROW(Simulator(c, SimOptions{}, t), std::invalid_argument);
  Cluster g;
  g.gpus_per_node = 2;
  g.gpu_direct = {{true}};
  EXPECT_THROW(Simulator(g, SimOptions{}, t), std::invalid_argument);
}

}  // namespace
}  // namespace tensorwire::sim::testing
