#include "core/coverage.h"

#include "core/assert.h"

namespace tensorwire {

size_t CoverageGroup::reached() const {
  size_t n = 0;
  for (const CoverageItem& i : items) n += i.count != 0 ? 1 : 0;
  return n;
}

CoverageGroup* Coverage::find_group(std::string_view group) {
  for (CoverageGroup& g : groups_) {
    if (g.name == group) return &g;
  }
  return nullptr;
}

const CoverageGroup* Coverage::find_group(std::string_view group) const {
  for (const CoverageGroup& g : groups_) {
    if (g.name == group) return &g;
  }
  return nullptr;
}

CoverageItem* Coverage::find_item(std::string_view group, std::string_view item) {
  if (last_group_ < groups_.size() && groups_[last_group_].name == group) {
    std::vector<CoverageItem>& items = groups_[last_group_].items;
    for (size_t i : {last_item_ + 1, last_item_}) {
      if (i < items.size() && items[i].name == item) {
        last_item_ = i;
        return &items[i];
      }
    }
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].name != group) continue;
    std::vector<CoverageItem>& items = groups_[g].items;
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].name != item) continue;
      last_group_ = g;
      last_item_ = i;
      return &items[i];
    }
    return nullptr;
  }
  return nullptr;
}

CoverageItem& Coverage::item_of(std::string_view group, std::string_view item) {
  if (CoverageItem* found = find_item(group, item)) return *found;
  CoverageGroup* g = find_group(group);
  if (g == nullptr) {
    groups_.push_back(CoverageGroup{std::string(group), {}});
    g = &groups_.back();
  }
  g->items.push_back(CoverageItem{std::string(item), 0});
  last_group_ = static_cast<size_t>(g - groups_.data());
  last_item_ = g->items.size() - 1;
  return g->items.back();
}

void Coverage::declare(std::string_view group, std::string_view item) {
  TW_ASSERT_MSG(!group.empty() && !item.empty(), "a coverage item has a group and a name");
  (void)item_of(group, item);
}

void Coverage::count(std::string_view group, std::string_view item, uint64_t times) {
  CoverageItem* found = find_item(group, item);
  TW_ASSERT_MSG(found != nullptr, "a protocol counted a coverage item it never declared");
  found->count += times;
}

void Coverage::add(const Coverage& other) {
  // Runs of one protocol declare the same items in the same order: match by
  // position first, by name only where that fails.
  for (size_t gi = 0; gi < other.groups_.size(); ++gi) {
    const CoverageGroup& g = other.groups_[gi];
    const bool same_group = gi < groups_.size() && groups_[gi].name == g.name;
    for (size_t ii = 0; ii < g.items.size(); ++ii) {
      const CoverageItem& i = g.items[ii];
      if (same_group && ii < groups_[gi].items.size() && groups_[gi].items[ii].name == i.name) {
        groups_[gi].items[ii].count += i.count;
      } else {
        item_of(g.name, i.name).count += i.count;
      }
    }
  }
}

bool Coverage::declared(std::string_view group, std::string_view item) const {
  const CoverageGroup* g = find_group(group);
  if (g == nullptr) return false;
  for (const CoverageItem& i : g->items) {
    if (i.name == item) return true;
  }
  return false;
}

uint64_t Coverage::count_of(std::string_view group, std::string_view item) const {
  const CoverageGroup* g = find_group(group);
  if (g == nullptr) return 0;
  for (const CoverageItem& i : g->items) {
    if (i.name == item) return i.count;
  }
  return 0;
}

std::vector<std::string> Coverage::never_reached() const {
  std::vector<std::string> out;
  for (const CoverageGroup& g : groups_) {
    for (const CoverageItem& i : g.items) {
      if (i.count == 0) out.push_back(g.name + ": " + i.name);
    }
  }
  return out;
}

void add_transition_coverage(Coverage& into, const std::vector<TransitionTable>& tables) {
  // One name buffer, and each group walked in its declaration order (where
  // Coverage finds the next item first): runs of many executions call this
  // once per execution.
  std::string name;
  std::vector<uint64_t> state_taken;
  for (const TransitionTable& t : tables) {
    const size_t n = t.state_count();
    state_taken.assign(n, 0);
    for (size_t from = 0; from < n; ++from) {
      for (size_t to = 0; to < n; ++to) {
        if (!t.allowed(from, to)) continue;
        state_taken[from] += t.taken(from, to);
        state_taken[to] += t.taken(from, to);
      }
    }
    for (size_t s = 0; s < n; ++s) {
      name.assign(t.machine()).append(".").append(t.state_name(s));
      into.declare(kCoverageStates, name);
      if (state_taken[s] != 0) into.count(kCoverageStates, name, state_taken[s]);
    }
    for (size_t from = 0; from < n; ++from) {
      for (size_t to = 0; to < n; ++to) {
        if (!t.allowed(from, to)) continue;
        name.assign(t.machine()).append(" ").append(t.state_name(from)).append("->").append(
            t.state_name(to));
        into.declare(kCoverageTransitions, name);
        if (t.taken(from, to) != 0) into.count(kCoverageTransitions, name, t.taken(from, to));
      }
    }
  }
}

}  // namespace tensorwire
