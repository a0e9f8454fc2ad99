#include "core/protocol_counters.h"

#include <gtest/gtest.h>

namespace tensorwire {
namespace {

using R = CounterRole;

TEST(ProtocolCounters, AddByNameKeepsTheFirstOrderAndAppendsNewNames) {
  ProtocolCounters a = {{"requests", R::kControlMessage, 2}, {"writes", R::kContentTransfer, 1}};
  const ProtocolCounters b = {{"writes", R::kContentTransfer, 5}, {"acks", R::kControlMessage, 3},
                              {"requests", R::kControlMessage, 1}};
  add_counters(a, b);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].name, "requests");
  EXPECT_EQ(a[0].value, 3u);
  EXPECT_EQ(a[1].value, 6u);
  EXPECT_EQ(a[2].name, "acks");
  EXPECT_EQ(counter_value(a, "acks"), 3u);
  EXPECT_EQ(counter_value(a, "nothing"), 0u);
  EXPECT_EQ(counter_total(a, R::kControlMessage), 6u);
  EXPECT_EQ(counter_total(a, R::kProblem), 0u);
}

TEST(ProtocolCounters, RoleNamesRoundTrip) {
  for (CounterRole role : {R::kControlMessage, R::kContentTransfer, R::kCopy, R::kRegistration,
                           R::kProblem, R::kOther}) {
    CounterRole back = R::kOther;
    ASSERT_TRUE(counter_role_from_name(counter_role_name(role), back)) << counter_role_name(role);
    EXPECT_EQ(back, role);
  }
  CounterRole unchanged = R::kCopy;
  EXPECT_FALSE(counter_role_from_name("control message", unchanged));
  EXPECT_EQ(unchanged, R::kCopy);
}

TEST(ProtocolCountersDeathTest, OneNameHasOneRole) {
  ProtocolCounters a = {{"x", R::kCopy, 1}};
  EXPECT_DEATH(add_counters(a, {{"x", R::kProblem, 1}}), "one counter name, one role");
}

}  // namespace
}  // namespace tensorwire
