#include "core/state_transitions.h"

#include <gtest/gtest.h>

namespace tensorwire {
namespace {

TransitionTable three_states() {
  TransitionTable t("Machine", {"A", "B", "C"});
  t.allow(0, 1);
  t.allow(1, 2);
  t.allow(0, 2);
  return t;
}

TEST(TransitionTable, CountsLegalTransitionsAndReportsCoverage) {
  TransitionTable t = three_states();
  EXPECT_EQ(t.covered(), "none");
  EXPECT_EQ(t.uncovered(), "A->B, A->C, B->C");
  t.count(0, 1);
  t.count(1, 2, 4);
  EXPECT_EQ(t.taken(1, 2), 4u);
  EXPECT_TRUE(t.allowed(0, 2));
  EXPECT_FALSE(t.allowed(2, 0));
  EXPECT_EQ(t.covered(), "A->B (1), B->C (4)");
  EXPECT_EQ(t.uncovered(), "A->C");
}

TEST(TransitionTable, TablesAddByMachineName) {
  std::vector<TransitionTable> into;
  TransitionTable a = three_states();
  a.count(0, 1);
  add_transition_tables(into, {a});
  add_transition_tables(into, {a, TransitionTable("Other", {"X"})});
  ASSERT_EQ(into.size(), 2u);
  EXPECT_EQ(into[0].taken(0, 1), 2u);
  EXPECT_EQ(into[1].machine(), "Other");
}

// A copy shares the machine's names and rules (a protocol copies a table
// built once per run): counting into it, or allowing more in it, leaves the
// original as it was; adding a table built apart with the same names takes
// its rules along.
TEST(TransitionTable, ACopyCountsAndAllowsOnItsOwn) {
  const TransitionTable original = three_states();
  TransitionTable copy = original;
  copy.count(0, 1, 3);
  copy.allow(2, 0);
  copy.count(2, 0);
  EXPECT_EQ(original.taken(0, 1), 0u);
  EXPECT_FALSE(original.allowed(2, 0));
  EXPECT_EQ(original.uncovered(), "A->B, A->C, B->C");
  EXPECT_EQ(copy.covered(), "A->B (3), C->A (1)");

  TransitionTable sum = original;
  sum.add(copy);
  EXPECT_TRUE(sum.allowed(2, 0));
  EXPECT_EQ(sum.taken(2, 0), 1u);
  EXPECT_FALSE(original.allowed(2, 0)) << "the sum's rules are its own";
  TransitionTable apart("Machine", {"A", "B", "C"});
  apart.allow(1, 0);
  sum.add(apart);
  EXPECT_TRUE(sum.allowed(1, 0));
  EXPECT_EQ(sum.uncovered(), "A->C, B->A, B->C");
}

TEST(TransitionTableDeathTest, AnIllegalTransitionIsCaughtWhereItHappens) {
  TransitionTable t = three_states();
  EXPECT_DEATH(t.count(2, 0), "a state machine took a transition its table forbids");
  EXPECT_DEATH(t.count(0, 3), "a transition is between the machine's states");
}

}  // namespace
}  // namespace tensorwire
