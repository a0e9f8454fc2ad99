#include "core/coverage.h"

#include "core/assert.h"

namespace tensorwire {

size_t CoverageGroup::reached() const {
  size_t n = 0;
  for (const CoverageItem& i : items) n += i.count != 0 ? 1 : 0;
  return n;
}

namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

}  // namespace

Coverage::Names& Coverage::own_names() {
  if (names_ == nullptr) {
    names_ = std::make_shared<Names>();
  } else if (names_.use_count() > 1) {
    names_ = std::make_shared<Names>(*names_);
  }
  return *names_;
}

size_t Coverage::find_group(std::string_view group) const {
  if (names_ == nullptr) return kNone;
  for (size_t g = 0; g < names_->groups.size(); ++g) {
    if (names_->groups[g] == group) return g;
  }
  return kNone;
}

size_t Coverage::find_item_const(std::string_view group, std::string_view item) const {
  const size_t g = find_group(group);
  if (g == kNone) return kNone;
  const std::vector<std::string>& items = names_->items[g];
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i] == item) return names_->first[g] + i;
  }
  return kNone;
}

size_t Coverage::find_item(std::string_view group, std::string_view item) {
  if (names_ == nullptr) return kNone;
  if (last_group_ < names_->groups.size() && names_->groups[last_group_] == group) {
    const std::vector<std::string>& items = names_->items[last_group_];
    for (size_t i : {last_item_ + 1, last_item_}) {
      if (i < items.size() && items[i] == item) {
        last_item_ = i;
        return names_->first[last_group_] + i;
      }
    }
  }
  const size_t at = find_item_const(group, item);
  if (at != kNone) {
    last_group_ = find_group(group);
    last_item_ = at - names_->first[last_group_];
  }
  return at;
}

size_t Coverage::item_of(std::string_view group, std::string_view item) {
  if (const size_t found = find_item(group, item); found != kNone) return found;
  size_t g = find_group(group);
  Names& names = own_names();
  if (g == kNone) {
    g = names.groups.size();
    names.groups.emplace_back(group);
    names.items.emplace_back();
    names.first.push_back(counts_.size());
  }
  // The new item goes last in its group: the groups after it move up one.
  const size_t at = names.first[g] + names.items[g].size();
  names.items[g].emplace_back(item);
  counts_.insert(counts_.begin() + static_cast<std::ptrdiff_t>(at), 0);
  for (size_t later = g + 1; later < names.first.size(); ++later) ++names.first[later];
  last_group_ = g;
  last_item_ = names.items[g].size() - 1;
  TW_ASSERT(counts_.size() == names.first.back() + names.items.back().size());
  return at;
}

void Coverage::declare(std::string_view group, std::string_view item) {
  TW_ASSERT_MSG(!group.empty() && !item.empty(), "a coverage item has a group and a name");
  (void)item_of(group, item);
}

void Coverage::count(std::string_view group, std::string_view item, uint64_t times) {
  const size_t found = find_item(group, item);
  TW_ASSERT_MSG(found != kNone, "a protocol counted a coverage item it never declared");
  counts_[found] += times;
}

void Coverage::add(const Coverage& other) {
  if (other.empty()) return;
  if (empty()) {
    names_ = other.names_;
    counts_ = other.counts_;
    return;
  }
  // Runs of one protocol start from one declaration: the same names, item
  // for item. Otherwise by name, appending what `this` lacks in `other`'s order.
  if (names_ == other.names_) {
    TW_ASSERT(counts_.size() == other.counts_.size());
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
    return;
  }
  const Names& theirs = *other.names_;
  for (size_t g = 0; g < theirs.groups.size(); ++g) {
    for (size_t i = 0; i < theirs.items[g].size(); ++i) {
      const uint64_t n = other.counts_[theirs.first[g] + i];
      counts_[item_of(theirs.groups[g], theirs.items[g][i])] += n;
    }
  }
}

bool Coverage::declared(std::string_view group, std::string_view item) const {
  return find_item_const(group, item) != kNone;
}

uint64_t Coverage::count_of(std::string_view group, std::string_view item) const {
  const size_t at = find_item_const(group, item);
  return at == kNone ? 0 : counts_[at];
}

std::vector<CoverageGroup> Coverage::groups() const {
  std::vector<CoverageGroup> out;
  if (names_ == nullptr) return out;
  for (size_t g = 0; g < names_->groups.size(); ++g) {
    CoverageGroup& group = out.emplace_back();
    group.name = names_->groups[g];
    for (size_t i = 0; i < names_->items[g].size(); ++i) {
      group.items.push_back(CoverageItem{names_->items[g][i], counts_[names_->first[g] + i]});
    }
  }
  return out;
}

std::vector<std::string> Coverage::never_reached() const {
  std::vector<std::string> out;
  if (names_ == nullptr) return out;
  for (size_t g = 0; g < names_->groups.size(); ++g) {
    for (size_t i = 0; i < names_->items[g].size(); ++i) {
      if (counts_[names_->first[g] + i] == 0) {
        out.push_back(names_->groups[g] + ": " + names_->items[g][i]);
      }
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
