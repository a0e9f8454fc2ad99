// The dfs strategy's partial-order reduction against brute force. Small event
// systems are drawn at random and run on the simulator's own EventQueue: ranks,
// events due at a few time stamps, events that schedule others (on any rank,
// now or one tick later) and events that change another rank directly
// (EventQueue::touch). What an execution leaves behind is each rank's history:
// the labels of the events that changed it, in order. Every distinct set of
// histories that plain exhaustive search reaches, the reduced search must reach
// too, in fewer executions whenever ranks run side by side.
#include "model/dpor_search.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <tuple>
#include <utility>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend_sim/event_queue.h"
#include "core/splitmix64.h"
#include "model/choice_strategy.h"

namespace tensorwire::model {
namespace {

struct ToyEvent {
  uint32_t rank = 0;
  int64_t at_ns = 0;  // a root: when it is due; a child: how long after its parent
  std::vector<uint32_t> touches;   // other ranks it changes directly
  std::vector<size_t> children;    // events it schedules when it runs
};

struct ToySystem {
  uint32_t ranks = 2;
  std::vector<ToyEvent> events;  // events[0..roots) are scheduled up front
  size_t roots = 0;
};

ToySystem draw_system(uint64_t seed) {
  uint64_t state = seed;
  auto below = [&state](uint64_t n) { return splitmix64(state) % n; };
  ToySystem s;
  s.ranks = 2 + static_cast<uint32_t>(below(2));
  s.roots = 2 + below(3);
  const size_t total = s.roots + below(6);
  for (size_t e = 0; e < total; ++e) {
    ToyEvent t;
    t.rank = static_cast<uint32_t>(below(s.ranks));
    t.at_ns = e < s.roots ? static_cast<int64_t>(below(2)) : (below(3) == 0 ? 1 : 0);
    if (below(5) == 0) t.touches.push_back(static_cast<uint32_t>(below(s.ranks)));
    s.events.push_back(t);
  }
  // Every non-root event gets one parent among the events before it.
  for (size_t e = s.roots; e < total; ++e) s.events[below(e)].children.push_back(e);
  return s;
}

// Forwards to a scheduler the test keeps (EventQueue owns what it is given).
class Forward final : public sim::Scheduler {
 public:
  explicit Forward(sim::Scheduler& to) : to_(to) {}
  size_t pick(std::span<const sim::ReadyEvent> ready) override { return to_.pick(ready); }
  void ran(const sim::ReadyEvent& e) override { to_.ran(e); }
  void used(const sim::SharedObject& object) override { to_.used(object); }
  void nic_work_on_send_queue(uint32_t rank, uint32_t peer) override {
    to_.nic_work_on_send_queue(rank, peer);
  }
  // While a fault is on offer every event is a choice point (as in the explorer).
  bool wants_every_event() const override { return to_.wants_every_event(); }

 private:
  sim::Scheduler& to_;
};

using Histories = std::vector<std::vector<size_t>>;

Histories run_once(const ToySystem& s, ChoiceStrategy& strategy) {
  RecordingScheduler recorder(strategy);
  sim::EventQueue queue;
  queue.set_scheduler(std::make_unique<Forward>(recorder));
  Histories h(s.ranks);
  std::function<void(size_t)> schedule = [&](size_t e) {
    const ToyEvent& t = s.events[e];
    const int64_t at = e < s.roots ? t.at_ns : queue.now_ns() + t.at_ns;
    queue.schedule_at(at, t.rank, "toy", [&, e] {
      const ToyEvent& me = s.events[e];
      h[me.rank].push_back(e);
      for (uint32_t r : me.touches) {
        queue.touch(r);
        h[r].push_back(e);
      }
      for (size_t c : me.children) schedule(c);
    });
  };
  for (size_t e = 0; e < s.roots; ++e) schedule(e);
  while (queue.run_next()) {
  }
  return h;
}

// Plain exhaustive search: every choice sequence, in lexicographic order.
class Enumerate final : public ChoiceStrategy {
 public:
  uint32_t choose(std::span<const sim::ReadyEvent> ready, uint64_t step) override {
    if (step >= path_.size()) path_.push_back({0, static_cast<uint32_t>(ready.size())});
    return path_[step].first;
  }
  bool next() {
    while (!path_.empty() && path_.back().first + 1 >= path_.back().second) path_.pop_back();
    if (path_.empty()) return false;
    ++path_.back().first;
    return true;
  }

 private:
  std::vector<std::pair<uint32_t, uint32_t>> path_;
};

// For 2000 drawn systems: the reduced search reaches every outcome that plain
// exhaustive search reaches, in no more executions; returns on how many
// systems it needed fewer.
template <typename Draw, typename Run>
uint64_t compare_with_brute_force(Draw draw, Run run_once_with, uint64_t systems = 2000,
                                  const std::function<void(DporSearch&)>& setup = {},
                                  uint64_t* total_runs = nullptr) {
  uint64_t fewer = 0;
  for (uint64_t seed = 1; seed <= systems; ++seed) {
    const auto s = draw(seed);
    using Outcome = decltype(run_once_with(s, std::declval<ChoiceStrategy&>()));
    std::set<Outcome> brute;
    uint64_t brute_runs = 0;
    Enumerate all;
    do {
      brute.insert(run_once_with(s, all));
      ++brute_runs;
    } while (all.next() && brute_runs < 100000);
    if (brute_runs >= 100000) continue;  // too big to enumerate: nothing to compare with
    std::set<Outcome> reduced;
    uint64_t reduced_runs = 0;
    DporSearch dpor(s.ranks);
    if (setup) setup(dpor);
    do {
      reduced.insert(run_once_with(s, dpor));
      ++reduced_runs;
    } while (dpor.next_execution());
    if (total_runs != nullptr) *total_runs += reduced_runs;
    EXPECT_EQ(reduced, brute) << "seed " << seed;
    EXPECT_LE(reduced_runs, brute_runs) << "seed " << seed;
    if (reduced_runs < brute_runs) ++fewer;
  }
  return fewer;
}

TEST(DporSearch, ReachesEveryOutcomeOfExhaustiveSearch) {
  EXPECT_GT(compare_with_brute_force(draw_system, run_once), 50u)
      << "the reduction should pay off on many of the drawn systems";
}

// The same comparison with the finer objects the simulator reports: some
// events are the NIC's own work on a send queue (they change that queue, not
// their rank), and events use send queues, CPUs and memory ranges besides.
// An execution's outcome is every object's history: the events that used it,
// in order.
struct ObjectEvent {
  uint32_t rank = 0;
  int64_t at_ns = 0;
  int64_t nic_peer = -1;  // >= 0: NIC work on the send queue rank -> nic_peer
  std::vector<sim::SharedObject> uses;
  std::vector<size_t> children;
};

struct ObjectSystem {
  uint32_t ranks = 2;
  std::vector<ObjectEvent> events;
  size_t roots = 0;
};

ObjectSystem draw_object_system(uint64_t seed) {
  uint64_t state = seed;
  auto below = [&state](uint64_t n) { return splitmix64(state) % n; };
  ObjectSystem s;
  s.ranks = 2 + static_cast<uint32_t>(below(2));
  s.roots = 2 + below(3);
  const size_t total = s.roots + below(6);
  auto some_object = [&]() {
    const uint32_t r = static_cast<uint32_t>(below(s.ranks));
    switch (below(5)) {
      case 0: return sim::SharedObject::whole_rank(r);
      case 4: return sim::SharedObject::queue_pair(r, static_cast<uint32_t>(below(s.ranks)));
      case 1: return sim::SharedObject::send_queue(r, static_cast<uint32_t>(below(s.ranks)));
      case 2: return sim::SharedObject::cpu(r);
      default: {
        // Units 0..2 and 16 (which shares unit 0's bin), one or two units long.
        const uint64_t units[] = {0, 1, 2, 16};
        return sim::SharedObject::memory(r, units[below(4)] * 256, 256 * (1 + below(2)));
      }
    }
  };
  for (size_t e = 0; e < total; ++e) {
    ObjectEvent t;
    t.rank = static_cast<uint32_t>(below(s.ranks));
    t.at_ns = e < s.roots ? static_cast<int64_t>(below(2)) : (below(3) == 0 ? 1 : 0);
    if (below(2) == 0) t.nic_peer = static_cast<int64_t>(below(s.ranks));
    for (uint64_t n = below(3); n > 0; --n) t.uses.push_back(some_object());
    s.events.push_back(t);
  }
  for (size_t e = s.roots; e < total; ++e) s.events[below(e)].children.push_back(e);
  return s;
}

using ObjectKey = std::tuple<int, uint32_t, uint32_t, uint64_t>;  // kind, rank, peer, 256-byte unit
using ObjectHistories = std::map<ObjectKey, std::vector<size_t>>;

// The objects the drawn systems' fault acts on, as the explorer's QP error
// does: both ends of the queue pair between ranks 0 and 1 and both its send
// queues.
std::vector<sim::SharedObject> fault_objects() {
  return {sim::SharedObject::queue_pair(0, 1), sim::SharedObject::queue_pair(1, 0),
          sim::SharedObject::send_queue(0, 1), sim::SharedObject::send_queue(1, 0)};
}

bool is_fault_object(const sim::SharedObject& o) {
  for (const sim::SharedObject& f : fault_objects()) {
    if (f.kind == o.kind && f.rank == o.rank && f.peer == o.peer) return true;
  }
  return false;
}

// With `fault`, a fault is on offer at every choice point, as the explorer
// offers one: once picked, it strikes there, as a step of its own, using its
// objects. An event after it that uses one of those objects (its own send
// queue included) sees it: it is recorded as kAfterFault + its label and
// schedules none of its children (the fault cancelled that work). Events that
// use none of them cannot tell, as the simulator's contract says. So where
// the fault fell among the events on its objects is part of the outcome, and
// so is what it cancelled; a fault that no event sees is no fault (as in the
// explorer, where a QP error after the QP's last use changes no outcome).
constexpr size_t kAfterFault = 1000;

// With `flushes` as well, up to two faults strike, and each schedules an
// event of its own at once (as a QP error schedules its flushed
// completions): its parent is the fault.
// With `digest_for`, that search is given a fingerprint of the state: the
// histories so far and whether a fault struck (an abstraction, for tests of
// the state cache).
ObjectHistories run_objects_once(const ObjectSystem& s, ChoiceStrategy& strategy, bool fault = false,
                                 bool flushes = false, DporSearch* digest_for = nullptr) {
  FaultOffer offer;
  if (fault) offer.kinds = {FaultKind::kQpError};
  if (flushes) offer.max_faults = 2;
  RecordingScheduler recorder(strategy, offer);
  bool struck = false;
  sim::EventQueue queue;
  queue.set_scheduler(std::make_unique<Forward>(recorder));
  ObjectHistories h;
  auto record = [&h](const sim::SharedObject& o, size_t e) {
    if (o.kind != sim::SharedObject::Kind::kMemory) {
      h[{static_cast<int>(o.kind), o.rank, o.peer, 0}].push_back(e);
      return;
    }
    for (uint64_t u = o.addr / 256; u <= (o.addr + o.length - 1) / 256; ++u) {
      h[{static_cast<int>(o.kind), o.rank, 0, u}].push_back(e);
    }
  };
  std::function<void(size_t)> schedule = [&](size_t e) {
    const ObjectEvent& t = s.events[e];
    const int64_t at = e < s.roots ? t.at_ns : queue.now_ns() + t.at_ns;
    queue.schedule_at(at, t.rank, "toy", [&, e] {
      const ObjectEvent& me = s.events[e];
      bool sees_fault = false;
      if (struck) {
        if (me.nic_peer >= 0) {
          sees_fault = is_fault_object(sim::SharedObject::send_queue(me.rank, static_cast<uint32_t>(me.nic_peer)));
        }
        for (const sim::SharedObject& o : me.uses) sees_fault = sees_fault || is_fault_object(o);
      }
      const size_t label = sees_fault ? e + kAfterFault : e;
      if (me.nic_peer >= 0) {
        const uint32_t peer = static_cast<uint32_t>(me.nic_peer);
        queue.nic_work_on_send_queue(me.rank, peer);
        record(sim::SharedObject::send_queue(me.rank, peer), label);
      } else {
        record(sim::SharedObject::whole_rank(me.rank), label);
      }
      for (const sim::SharedObject& o : me.uses) {
        queue.use(o);
        record(o, label);
      }
      if (sees_fault) return;
      for (size_t c : me.children) schedule(c);
    });
  };
  size_t flushed = 0;
  recorder.set_fault_handler([&](const InjectedFault&) {
    struck = true;
    for (const sim::SharedObject& o : fault_objects()) queue.use(o);
    if (!flushes) return;
    const size_t label = 2 * kAfterFault + flushed++;
    queue.schedule_at(queue.now_ns(), 0, "flush", [&, label] {
      for (const sim::SharedObject& o : fault_objects()) {
        queue.use(o);
        record(o, label);
      }
    });
  });
  if (digest_for != nullptr) {
    digest_for->set_fingerprint([&h, &struck] {
      uint64_t d = struck ? 0x5eed : 1;
      for (const auto& [key, labels] : h) {
        const auto& [kind, rank, peer, unit] = key;
        d = d * 0x100000001b3ull ^ (static_cast<uint64_t>(kind) * 131 + rank * 17 + peer * 7 + unit);
        for (size_t label : labels) d = d * 0x100000001b3ull ^ label;
      }
      return d;
    });
  }
  for (size_t e = 0; e < s.roots; ++e) schedule(e);
  while (queue.run_next()) {
  }
  if (digest_for != nullptr) digest_for->set_fingerprint({});
  return h;
}

TEST(DporSearch, WithSendQueuesCpusAndMemoryReachesEveryOutcomeOfExhaustiveSearch) {
  auto without_fault = [](const ObjectSystem& s, ChoiceStrategy& strategy) {
    return run_objects_once(s, strategy);
  };
  EXPECT_GT(compare_with_brute_force(draw_object_system, without_fault), 50u)
      << "the reduction should pay off on many of the drawn systems";
}

// A fault on offer, tried at every choice point: every place brute force
// puts it, among every order of the events, the reduction reaches too. (A
// fault that nothing races with, offered at every choice point but never
// ordered with the events on its objects, loses the places between events
// that the one explored order of independent events never puts side by side:
// this test caught that variant.)
TEST(DporSearch, WithAFaultOnOfferReachesEveryOutcomeOfExhaustiveSearch) {
  auto with_fault = [](const ObjectSystem& s, ChoiceStrategy& strategy) {
    return run_objects_once(s, strategy, true);
  };
  EXPECT_GT(compare_with_brute_force(draw_object_system, with_fault, 500), 50u)
      << "the reduction should pay off on many of the drawn systems";
}

// The same fault placed by its races (DporSearch::place_fault_by_races)
// instead of at every choice point: the same outcomes as brute force, and in
// all fewer executions than trying it everywhere.
TEST(DporSearch, AFaultPlacedByItsRacesReachesEveryOutcomeOfExhaustiveSearch) {
  auto with_fault = [](const ObjectSystem& s, ChoiceStrategy& strategy) {
    return run_objects_once(s, strategy, true);
  };
  uint64_t everywhere = 0;
  uint64_t by_races = 0;
  compare_with_brute_force(draw_object_system, with_fault, 500, {}, &everywhere);
  const uint64_t fewer = compare_with_brute_force(
      draw_object_system, with_fault, 500,
      [](DporSearch& dpor) { dpor.place_fault_by_races("qp_error", fault_objects()); }, &by_races);
  EXPECT_GT(fewer, 50u) << "the reduction should pay off on many of the drawn systems";
  EXPECT_LT(by_races, everywhere) << "placing the fault by its races should save executions";
}

// The race analysis of an execution starts at the step where it branched
// from the one before (the replayed steps' clocks and races are kept): it
// must explore exactly what analysing every execution from its first step
// explores, the same prefixes in the same order, with and without faults
// (offered everywhere, placed by their races, or two that schedule events),
// with the state cache and as a shard.
TEST(DporSearch, IncrementalRaceAnalysisExploresWhatTheFullOneDoes) {
  // 0: no fault; 1: one offered everywhere; 2: one placed by its races; 3:
  // two offered everywhere, each scheduling a flush; 4: 1 with the state
  // cache; 5: 2 with the exact state cache; 6: 0 as shard 0 of 2.
  uint64_t cut = 0;  // executions the state cache cut short
  auto prefixes = [&cut](const ObjectSystem& s, int variant, bool incremental) {
    DporSearch dpor(s.ranks);
    dpor.set_incremental_analysis(incremental);
    if (variant == 2 || variant == 5) dpor.place_fault_by_races("qp_error", fault_objects());
    if (variant == 4 || variant == 5) dpor.cache_states(variant == 5);
    if (variant == 6) dpor.keep_share(0, 2);
    const bool fault = variant >= 1 && variant <= 5;
    std::vector<std::vector<uint32_t>> explored;
    do {
      run_objects_once(s, dpor, fault, variant == 3, variant == 4 || variant == 5 ? &dpor : nullptr);
      explored.push_back(dpor.current_prefix());
    } while (dpor.next_execution() && explored.size() < 5000);
    cut += dpor.cached_executions();
    return explored;
  };
  uint64_t branched = 0;  // systems where some execution replayed a prefix
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const ObjectSystem s = draw_object_system(seed);
    // (Variant 3, whose searches are the largest, on the first 60 systems.)
    for (int variant = 0; variant < 7; ++variant) {
      if (variant == 3 && seed > 60) continue;
      const auto full = prefixes(s, variant, false);
      const auto incremental = prefixes(s, variant, true);
      ASSERT_EQ(incremental, full) << "seed " << seed << ", variant " << variant;
      if (full.size() > 2) ++branched;
    }
  }
  EXPECT_GT(branched, 1000u) << "most drawn searches should run more than two executions";
  EXPECT_GT(cut, 100u) << "the state cache should cut some executions";
}

TEST(DporSearch, RanksSideBySideAreNotInterleaved) {
  // Two ranks, three events each, all due at once: 20 interleavings, but only
  // the order of each rank's two children matters.
  ToySystem s;
  s.ranks = 2;
  for (uint32_t r = 0; r < 2; ++r) {
    ToyEvent parent;
    parent.rank = r;
    s.events.push_back(parent);
  }
  s.roots = 2;
  for (uint32_t r = 0; r < 2; ++r) {
    for (int k = 0; k < 2; ++k) {
      ToyEvent child;
      child.rank = r;
      s.events[r].children.push_back(s.events.size());
      s.events.push_back(child);
    }
  }
  DporSearch dpor(2);
  uint64_t runs = 0;
  std::set<Histories> outcomes;
  do {
    outcomes.insert(run_once(s, dpor));
    ++runs;
  } while (dpor.next_execution());
  // Each rank's two children may run in either order: 2 x 2 traces.
  EXPECT_EQ(outcomes.size(), 4u);
  EXPECT_EQ(runs, 4u);
}

// A memory range's bins, as a rotated run of bits, against marking each of
// its 256-byte units' bins one by one.
TEST(DporSearch, AMemoryRangeFallsInTheBinsOfEachOfItsUnits) {
  uint64_t state = 7;
  for (uint32_t bins = 1; bins <= DporSearch::kMemoryBins; ++bins) {
    for (int trial = 0; trial < 2000; ++trial) {
      const uint64_t addr = splitmix64(state) % (1u << 20);
      const uint64_t length = trial % 3 == 0 ? splitmix64(state) % 256 : splitmix64(state) % (bins * 300);
      const uint64_t first = addr / 256;
      const uint64_t last = (addr + (length > 0 ? length - 1 : 0)) / 256;
      uint64_t expected = 0;
      if (last - first + 1 >= bins) {
        expected = (uint64_t{1} << bins) - 1;
      } else {
        for (uint64_t u = first; u <= last; ++u) expected |= uint64_t{1} << (u % bins);
      }
      ASSERT_EQ(DporSearch::memory_bin_bits(addr, length, bins), expected)
          << "addr " << addr << " length " << length << " bins " << bins;
    }
  }
}

}  // namespace
}  // namespace tensorwire::model
