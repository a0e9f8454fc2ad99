// The strategies that order same-time events: each is a pure function of its
// seed, stays in range, and replay follows what was recorded.
#include "model/choice_strategy.h"

#include <gtest/gtest.h>

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

TEST(PctStrategy, RunsTheHighestPriorityRankAndDemotesItAtAChangePoint) {
  // Depth 1: no change points, so one rank always wins while it is ready.
  PctStrategy fixed(3, 3, 1, 10);
  const auto ready = ready_of({0, 1, 2});
  const uint32_t first = fixed.choose(ready, 0);
  for (uint64_t step = 1; step < 20; ++step) EXPECT_EQ(fixed.choose(ready, step), first);
  // Depth 2 with one step expected: the change point is step 0, so the winner
  // of step 0 is demoted and another rank wins from step 1 on.
  PctStrategy changing(3, 3, 2, 1);
  const uint32_t before = changing.choose(ready, 0);
  const uint32_t after = changing.choose(ready, 1);
  EXPECT_NE(ready[before].rank, ready[after].rank);
  EXPECT_EQ(changing.choose(ready, 2), after);
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
