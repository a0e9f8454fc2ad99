#include "report/progress_bar.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <sstream>
#include <string>

namespace tensorwire::report {
namespace {

TEST(ProgressBar, DisabledWritesNothing) {
  std::ostringstream out;
  {
    ProgressBar bar(out, false, 1);
    for (size_t i = 0; i <= 10; ++i) bar.update(i, 10);
    bar.finish();
  }
  EXPECT_TRUE(out.str().empty());
}

TEST(ProgressBar, DrawsTheCountAndClearsTheLineAtTheEnd) {
  std::ostringstream out;
  ProgressBar bar(out, true, 1);
  bar.update(3, 10);
  EXPECT_NE(out.str().find("3/10 steps"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find('\n'), std::string::npos) << "a bar must not scroll the terminal";
  bar.update(10, 10);
  EXPECT_NE(out.str().find("[##############################] 10/10 steps"), std::string::npos)
      << out.str();
  bar.finish();
  const std::string s = out.str();
  // After finish the line holds only spaces and the cursor is back at column 0.
  const size_t last_draw = s.rfind("steps");
  const std::string tail = s.substr(last_draw + 5);
  EXPECT_EQ(tail.find_first_not_of(" \r"), std::string::npos);
  EXPECT_EQ(s.back(), '\r');
}

// issue 18 #8: `check` counts schedules, not steps; the caller names the unit.
TEST(ProgressBar, CountsInTheUnitTheCallerNames) {
  std::ostringstream out;
  ProgressBar bar(out, true, 1, "schedules");
  bar.update(7, 1000);
  EXPECT_NE(out.str().find("7/1000 schedules"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("steps"), std::string::npos) << out.str();
}

TEST(ProgressBar, NothingToClearWhenNothingWasDrawn) {
  std::ostringstream out;
  ProgressBar bar(out, true, 1);
  bar.update(0, 0);  // no steps: nothing to show
  bar.finish();
  EXPECT_TRUE(out.str().empty());
}

RC_GTEST_PROP(ProgressBar, RedrawsAtMostOncePerNStepsPlusTheFirstAndTheLast, ()) {
  const size_t total = *rc::gen::inRange<size_t>(1, 2000);
  const size_t every = *rc::gen::inRange<size_t>(1, 50);
  std::ostringstream out;
  ProgressBar bar(out, true, every);
  for (size_t i = 1; i <= total; ++i) bar.update(i, total);
  // The first update draws, then one draw per `every` steps, and the last step
  // always draws.
  RC_ASSERT(bar.redraws() <= (total - 1) / every + 2);
  RC_ASSERT(bar.redraws() >= 1);
  RC_ASSERT(out.str().find(std::to_string(total) + "/" + std::to_string(total)) !=
            std::string::npos);
}

}  // namespace
}  // namespace tensorwire::report
