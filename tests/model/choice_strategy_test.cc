// The strategies that order same-time events: each is a pure function of its
// seed, stays in range, and replay follows what was recorded.
#include "model/choice_strategy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tensorwire::model {
namespace {

std::vector<sim::ReadyEvent> ready_of(std::vector<uint32_t> ranks) {
  std::vector<sim::ReadyEvent> out;
  for (size_t i = 0; i < ranks.size(); ++i) out.push_back({i + 1, ranks[i], "timer"});
  return out;
}

TEST(RandomWalkStrategy, SameSeedSameChoicesAndEveryIndexInRange) {
  const auto ready = ready_of({0, 1, 0, 1, 2});
  RandomWalkStrategy a(9);
  RandomWalkStrategy b(9);
  RandomWalkStrategy c(10);
  std::vector<bool> seen(ready.size(), false);
  bool differs = false;
  for (uint64_t step = 0; step < 200; ++step) {
    const uint32_t x = a.choose(ready, step);
    ASSERT_LT(x, ready.size());
    EXPECT_EQ(x, b.choose(ready, step));
    differs = differs || x != c.choose(ready, step);
    seen[x] = true;
  }
  EXPECT_TRUE(differs);
  for (bool s : seen) EXPECT_TRUE(s);
}

sim::ReadyEvent event(uint64_t sequence, uint32_t rank, const char* kind) {
  return sim::ReadyEvent{sequence, rank, kind, 0, 0};
}

// Runs `steps` steps of two-way choices between a CPU and a copy-engine event
// of rank 0, telling the strategy what ran; returns the kinds chosen.
std::vector<std::string> pct_run(PctStrategy& pct, uint64_t steps) {
  std::vector<std::string> kinds;
  for (uint64_t step = 0; step < steps; ++step) {
    const std::vector<sim::ReadyEvent> ready = {event(2 * step + 1, 0, "timer"), event(2 * step + 2, 0, "copy")};
    const uint32_t pick = pct.choose(ready, step);
    EXPECT_LT(pick, ready.size());
    pct.ran(ready[pick]);
    kinds.push_back(ready[pick].kind);
  }
  return kinds;
}

TEST(PctStrategy, HonoursTheDepthWithExactlyDepthMinusOneDistinctChangePoints) {
  for (uint32_t depth = 1; depth <= 5; ++depth) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      PctStrategy pct(seed, depth, 30);
      ASSERT_EQ(pct.change_points().size(), depth - 1);
      std::vector<uint64_t> sorted = pct.change_points();
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "distinct";
      for (uint64_t k : sorted) {
        EXPECT_GE(k, 1u);
        EXPECT_LE(k, 30u);
      }
      pct_run(pct, 30);
      EXPECT_EQ(pct.steps(), 30u);
      EXPECT_EQ(pct.priority_changes(), depth - 1) << "depth " << depth << " seed " << seed;
    }
  }
  // Fewer steps expected than change points wanted: every step is one.
  PctStrategy short_run(1, 5, 2);
  EXPECT_EQ(short_run.change_points().size(), 2u);
}

TEST(PctStrategy, DepthOneRunsOneAgentWhileItIsReady) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    PctStrategy pct(seed, 1, 100);
    const std::vector<std::string> kinds = pct_run(pct, 50);
    EXPECT_EQ(std::count(kinds.begin(), kinds.end(), kinds[0]), 50) << "seed " << seed;
    EXPECT_EQ(pct.priority_changes(), 0u);
  }
}

TEST(PctStrategy, OrdersTwoAgentsOfOneRankBothWaysAcrossSeeds) {
  // The CPU and the copy engine of one rank are agents of their own: the
  // staging copy can run before or after the CPU's event, by the seed.
  const std::vector<sim::ReadyEvent> ready = {event(1, 0, "timer"), event(2, 0, "copy")};
  bool timer_first = false;
  bool copy_first = false;
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    PctStrategy pct(seed, 1, 10);
    const uint32_t pick = pct.choose(ready, 0);
    timer_first = timer_first || pick == 0;
    copy_first = copy_first || pick == 1;
  }
  EXPECT_TRUE(timer_first);
  EXPECT_TRUE(copy_first);
}

TEST(PctStrategy, AnAgentRunsItsOwnEventsOldestFirst) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    PctStrategy pct(seed, 3, 10);
    const std::vector<sim::ReadyEvent> ready = {event(9, 1, "completion"), event(4, 1, "completion")};
    EXPECT_EQ(pct.choose(ready, 0), 1u);
  }
}

TEST(PctStrategy, AChangePointDemotesTheAgentThatJustRan) {
  // Depth 2 with one step expected: the change point is step 1, so the agent
  // that runs first drops below the other from then on.
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    PctStrategy pct(seed, 2, 1);
    const std::vector<std::string> kinds = pct_run(pct, 5);
    EXPECT_EQ(pct.priority_changes(), 1u);
    for (size_t i = 2; i < kinds.size(); ++i) EXPECT_EQ(kinds[i], kinds[1]);
    EXPECT_NE(kinds[0], kinds[1]) << "seed " << seed;
  }
}

TEST(PctStrategy, SameSeedSameScheduleAndSeedsDiffer) {
  bool differs = false;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    PctStrategy a(seed, 3, 40);
    PctStrategy b(seed, 3, 40);
    PctStrategy c(seed + 100, 3, 40);
    EXPECT_EQ(a.change_points(), b.change_points());
    const std::vector<std::string> first = pct_run(a, 40);
    EXPECT_EQ(first, pct_run(b, 40));
    differs = differs || first != pct_run(c, 40);
  }
  EXPECT_TRUE(differs);
}

TEST(PctStrategy, AnInjectedFaultIsNoStep) {
  PctStrategy pct(1, 2, 5);
  pct.ran(sim::ReadyEvent{sim::Scheduler::kInjectedSequence, UINT32_MAX, "qp_error", 0, 0});
  EXPECT_EQ(pct.steps(), 0u);
  EXPECT_EQ(pct.agents(), 0u);
  pct.ran(event(1, 0, "timer"));
  pct.ran(event(2, 1, "timer"));
  pct.ran(event(3, 1, "timer"));
  EXPECT_EQ(pct.steps(), 3u);
  EXPECT_EQ(pct.agents(), 2u);
}

TEST(ReplayStrategy, FollowsTheRecordingAndNoticesDivergence) {
  const auto ready = ready_of({0, 1, 1});
  ReplayStrategy replay({2, 0, 1});
  EXPECT_EQ(replay.choose(ready, 0), 2u);
  EXPECT_EQ(replay.choose(ready, 1), 0u);
  EXPECT_EQ(replay.choose(ready, 2), 1u);
  EXPECT_FALSE(replay.diverged());
  EXPECT_EQ(replay.choose(ready, 3), 0u);  // past the end
  EXPECT_TRUE(replay.diverged());
  ReplayStrategy out_of_range({5});
  EXPECT_EQ(out_of_range.choose(ready, 0), 0u);
  EXPECT_TRUE(out_of_range.diverged());
}

TEST(RecordingScheduler, RecordsEveryChoiceAndWidth) {
  RandomWalkStrategy walk(1);
  RecordingScheduler scheduler(walk);
  const auto two = ready_of({0, 1});
  const auto three = ready_of({0, 1, 2});
  const size_t a = scheduler.pick(two);
  const size_t b = scheduler.pick(three);
  EXPECT_EQ(scheduler.choices(), (std::vector<uint32_t>{static_cast<uint32_t>(a), static_cast<uint32_t>(b)}));
  EXPECT_EQ(scheduler.widths(), (std::vector<uint32_t>{2, 3}));
}

}  // namespace
}  // namespace tensorwire::model
