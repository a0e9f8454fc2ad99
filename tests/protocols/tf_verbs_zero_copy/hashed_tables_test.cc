#include "core/protocols/tf_verbs_zero_copy/hashed_tables.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tensorwire::tf_verbs {
namespace {

// Keys inserted in an order of their own (a permutation of 0..n-1, far from
// sorted), so a hashed table's walk differs from the key order.
std::vector<uint64_t> shuffled_keys(uint64_t n) {
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < n; ++i) keys.push_back((i * 7919) % n);
  return keys;
}

TEST(HashedTablesTest, SortedKeysAndEntriesWalkAMapInKeyOrder) {
  std::unordered_map<uint64_t, int> table;
  std::map<uint64_t, int> ordered;
  for (uint64_t k : shuffled_keys(1000)) {
    table.emplace(k * 1000003, static_cast<int>(k));
    ordered.emplace(k * 1000003, static_cast<int>(k));
  }
  std::vector<uint64_t> want;
  for (const auto& [k, v] : ordered) want.push_back(k);
  EXPECT_EQ(sorted_keys(table), want);
  std::vector<std::pair<uint64_t, int>> got;
  for (const auto* entry : sorted_entries(table)) got.push_back(*entry);
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, int>>(ordered.begin(), ordered.end())));
}

TEST(HashedTablesTest, SortedKeysWalkASetInOrder) {
  std::unordered_set<uint32_t> set;
  for (uint64_t k : shuffled_keys(500)) set.insert(static_cast<uint32_t>(k));
  std::vector<uint32_t> got = sorted_keys(set);
  ASSERT_EQ(got.size(), 500u);
  for (uint32_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], i);
}

// The (name, step) and (rank, name) keys: found by a view of the name, equal
// only when both parts are, and walked in the order of the pair.
TEST(HashedTablesTest, NamedKeysAreFoundByViewAndOrderedAsPairs) {
  using Key = std::pair<std::string, uint64_t>;
  using View = std::pair<std::string_view, uint64_t>;
  std::unordered_map<Key, int, NamedKeyHash<Key, View>, NamedKeyEqual<Key, View>> by_step;
  by_step.emplace(Key{"w@w3", 2}, 1);
  by_step.emplace(Key{"w@w3", 1}, 2);
  by_step.emplace(Key{"a", 9}, 3);
  const std::string name = "w@w3";
  EXPECT_EQ(by_step.find(View{name, 1})->second, 2);
  EXPECT_EQ(by_step.find(View{"w@w3", 2})->second, 1);
  EXPECT_EQ(by_step.find(View{"w@w3", 3}), by_step.end());
  EXPECT_EQ(by_step.find(View{"w@w", 2}), by_step.end());
  EXPECT_EQ(sorted_keys(by_step), (std::vector<Key>{{"a", 9}, {"w@w3", 1}, {"w@w3", 2}}));

  using RankKey = std::pair<uint32_t, std::string>;
  using RankView = std::pair<uint32_t, std::string_view>;
  std::unordered_map<RankKey, int, NamedKeyHash<RankKey, RankView>,
                     NamedKeyEqual<RankKey, RankView>>
      by_rank;
  by_rank.emplace(RankKey{2, "a"}, 1);
  by_rank.emplace(RankKey{1, "b"}, 2);
  by_rank.emplace(RankKey{1, "a"}, 3);
  EXPECT_EQ(by_rank.find(RankView{1, "b"})->second, 2);
  EXPECT_EQ(by_rank.find(RankView{2, "b"}), by_rank.end());
  EXPECT_EQ(sorted_keys(by_rank), (std::vector<RankKey>{{1, "a"}, {1, "b"}, {2, "a"}}));
}

}  // namespace
}  // namespace tensorwire::tf_verbs
