#include "core/assert.h"

#include <gtest/gtest.h>

namespace tensorwire {
namespace {

TEST(AssertDeathTest, ABrokenAssertionNamesFileLineAndCondition) {
  const int two = 2;
  EXPECT_DEATH(TW_ASSERT(two + two == 5), "assert_test.cc:[0-9]+: assertion failed: two \\+ two == 5");
  EXPECT_DEATH(TW_ASSERT_MSG(two < 0, "two is positive"),
               "assertion failed: two < 0 \\(two is positive\\)");
  EXPECT_DEATH(TW_UNREACHABLE("no such state"), "assertion failed: unreachable \\(no such state\\)");
}

TEST(AssertDeathTest, AHoldingAssertionDoesNothing) {
  int evaluated = 0;
  TW_ASSERT(++evaluated == 1);
  TW_ASSERT_MSG(evaluated == 1, "evaluated once");
  EXPECT_EQ(evaluated, 1);
}

// The hot form is the full assertion where hot assertions are on (debug and
// sanitizer builds) and evaluates nothing where they are off (release).
TEST(AssertDeathTest, AHotAssertionFiresExactlyWhereHotAssertionsAreOn) {
  int evaluated = 0;
  TW_ASSERT_HOT(++evaluated == 1);
  TW_ASSERT_HOT_MSG(evaluated <= 1, "evaluated at most once");
  EXPECT_EQ(evaluated, TENSORWIRE_HOT_ASSERTS ? 1 : 0);
  const int two = 2;
  if (TENSORWIRE_HOT_ASSERTS) {
    EXPECT_DEATH(TW_ASSERT_HOT_MSG(two < 0, "two is positive"),
                 "assertion failed: two < 0 \\(two is positive\\)");
  } else {
    TW_ASSERT_HOT(two < 0);  // compiled out: nothing happens
  }
}

}  // namespace
}  // namespace tensorwire
