#include "core/coverage.h"

#include <gtest/gtest.h>

namespace tensorwire {
namespace {

Coverage declared() {
  Coverage c;
  c.declare("paths", "zero copy");
  c.declare("paths", "clone");
  c.declare("messages sent", "REQUEST");
  return c;
}

TEST(Coverage, DeclaresItemsAtZeroInGroupsInDeclarationOrder) {
  Coverage c = declared();
  c.declare("paths", "clone");  // again: nothing changes
  ASSERT_EQ(c.groups().size(), 2u);
  EXPECT_EQ(c.groups()[0].name, "paths");
  ASSERT_EQ(c.groups()[0].items.size(), 2u);
  EXPECT_EQ(c.groups()[0].items[1].name, "clone");
  EXPECT_EQ(c.groups()[0].reached(), 0u);
  EXPECT_TRUE(c.declared("messages sent", "REQUEST"));
  EXPECT_FALSE(c.declared("messages sent", "clone"));
  EXPECT_EQ(c.never_reached(),
            (std::vector<std::string>{"paths: zero copy", "paths: clone", "messages sent: REQUEST"}));
}

TEST(Coverage, CountsAndListsOnlyWhatWasNeverReached) {
  Coverage c = declared();
  c.count("paths", "clone", 3);
  c.count("messages sent", "REQUEST");
  EXPECT_EQ(c.count_of("paths", "clone"), 3u);
  EXPECT_EQ(c.count_of("paths", "nothing such"), 0u);
  EXPECT_EQ(c.groups()[0].reached(), 1u);
  EXPECT_EQ(c.never_reached(), (std::vector<std::string>{"paths: zero copy"}));
}

TEST(Coverage, RunsAddUpByNameAndKeepWhatOnlyOneDeclares) {
  Coverage a = declared();
  a.count("paths", "clone");
  Coverage b;
  b.declare("options", "timeout on");
  b.declare("paths", "clone");
  b.count("paths", "clone", 2);
  b.count("options", "timeout on");
  a.add(b);
  EXPECT_EQ(a.count_of("paths", "clone"), 3u);
  EXPECT_EQ(a.count_of("options", "timeout on"), 1u);
  ASSERT_EQ(a.groups().size(), 3u);
  EXPECT_EQ(a.groups()[2].name, "options");
  EXPECT_EQ(a.never_reached(), (std::vector<std::string>{"paths: zero copy", "messages sent: REQUEST"}));
}

// Copies share the declaration until one declares more: each counts on its
// own, a copy's new item is its own, and copies of one declaration add up
// item by item (a group declared in the middle included).
TEST(Coverage, CopiesCountAndDeclareOnTheirOwn) {
  const Coverage base = declared();
  Coverage a = base;
  Coverage b = base;
  a.count("paths", "clone", 2);
  b.count("paths", "clone", 5);
  b.count("messages sent", "REQUEST");
  b.declare("paths", "proxy");  // b's own from here
  b.count("paths", "proxy");
  EXPECT_EQ(base.count_of("paths", "clone"), 0u);
  EXPECT_FALSE(base.declared("paths", "proxy"));
  EXPECT_FALSE(a.declared("paths", "proxy"));
  EXPECT_EQ(b.groups()[0].items.size(), 3u);  // "proxy" last in its group, before "messages sent"
  EXPECT_EQ(b.groups()[0].items[2].name, "proxy");
  EXPECT_EQ(b.count_of("messages sent", "REQUEST"), 1u);

  Coverage total;
  total.add(a);
  total.add(base);
  Coverage c = base;
  c.count("paths", "zero copy", 7);
  total.add(c);
  EXPECT_EQ(total.count_of("paths", "zero copy"), 7u);
  EXPECT_EQ(total.count_of("paths", "clone"), 2u);
  total.add(b);  // a declaration of its own: by name
  EXPECT_EQ(total.count_of("paths", "clone"), 7u);
  EXPECT_EQ(total.count_of("paths", "proxy"), 1u);
  EXPECT_EQ(total.count_of("messages sent", "REQUEST"), 1u);
  EXPECT_EQ(total.never_reached(), std::vector<std::string>{});
  EXPECT_EQ(a.count_of("paths", "clone"), 2u);  // adding from a copy left it as it was
}

TEST(Coverage, TransitionTablesGiveStatesAndLegalTransitions) {
  TransitionTable t("Machine", {"A", "B", "C"});
  t.allow(0, 1);
  t.allow(1, 2);
  t.allow(0, 2);
  t.count(0, 1, 2);
  Coverage c;
  add_transition_coverage(c, {t});
  ASSERT_EQ(c.groups().size(), 2u);
  EXPECT_EQ(c.groups()[0].name, kCoverageStates);
  EXPECT_EQ(c.groups()[0].items.size(), 3u);
  EXPECT_EQ(c.groups()[1].items.size(), 3u);  // the legal ones only
  EXPECT_EQ(c.count_of(kCoverageTransitions, "Machine A->B"), 2u);
  EXPECT_GT(c.count_of(kCoverageStates, "Machine.A"), 0u);
  EXPECT_GT(c.count_of(kCoverageStates, "Machine.B"), 0u);
  EXPECT_EQ(c.never_reached(),
            (std::vector<std::string>{"states: Machine.C", "transitions: Machine A->C",
                                      "transitions: Machine B->C"}));
}

TEST(CoverageDeathTest, CountingAnUndeclaredItemIsCaughtWhereItHappens) {
  Coverage c = declared();
  EXPECT_DEATH(c.count("paths", "staging"), "counted a coverage item it never declared");
}

}  // namespace
}  // namespace tensorwire
