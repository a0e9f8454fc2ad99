// Feature coverage: what a protocol declares worth reaching (its states and
// transitions, the message types it sends and receives, the paths through its
// code, the options that change its behaviour) and how often a run reached
// each. A protocol declares every item up front at 0, so a run can say which
// it never reached; runs and the model checker's executions add up like
// TransitionTable. Named groups of named items, in declaration order, so every
// report is deterministic and protocol-neutral code reads it by name only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/state_transitions.h"

namespace tensorwire {

// The groups every protocol uses where it has such items, so that reports
// line up from one protocol to the next.
inline constexpr std::string_view kCoverageStates = "states";
inline constexpr std::string_view kCoverageTransitions = "transitions";
inline constexpr std::string_view kCoverageMessagesSent = "messages sent";
inline constexpr std::string_view kCoverageMessagesReceived = "messages received";
inline constexpr std::string_view kCoveragePaths = "paths";
inline constexpr std::string_view kCoverageOptions = "options";

struct CoverageItem {
  std::string name;
  uint64_t count = 0;
};

struct CoverageGroup {
  std::string name;
  std::vector<CoverageItem> items;

  size_t reached() const;
};

class Coverage {
 public:
  // Declares `item` in `group` (both created in the order first declared) at
  // 0; declaring it again changes nothing.
  void declare(std::string_view group, std::string_view item);
  // Adds `times` to an item; asserts it was declared (counting an item the
  // declaration lacks is a protocol bug: reports would never list it unreached).
  void count(std::string_view group, std::string_view item, uint64_t times = 1);
  // Adds another run's counts, by name; what `this` lacks is appended.
  void add(const Coverage& other);

  bool declared(std::string_view group, std::string_view item) const;
  // 0 for an item never declared.
  uint64_t count_of(std::string_view group, std::string_view item) const;
  // The groups, their items and counts, in declaration order (built on each call).
  std::vector<CoverageGroup> groups() const;
  bool empty() const { return names_ == nullptr || names_->groups.empty(); }
  // Items declared and never reached, "group: item", in declaration order.
  std::vector<std::string> never_reached() const;

 private:
  // What was declared, apart from the counts, and shared by copies until one
  // of them declares more: a model checker's execution starts from its
  // protocol's declaration (a copy of some sixty names, about seventy heap
  // blocks, in every execution) and adds into a search's total whose
  // declaration is the same one (item by item, no name compared).
  struct Names {
    std::vector<std::string> groups;
    std::vector<std::vector<std::string>> items;  // per group
    std::vector<size_t> first;                    // per group: its first item's count
  };
  // The group's index, or the index of the item's count; size_t(-1) when absent.
  size_t find_group(std::string_view group) const;
  // Tries the item after the last one found first: protocols declare and
  // count in one order, so that is usually it.
  size_t find_item(std::string_view group, std::string_view item);
  size_t find_item_const(std::string_view group, std::string_view item) const;
  size_t item_of(std::string_view group, std::string_view item);
  Names& own_names();  // names_, copied first if shared

  // Shared by copies: whoever declares more copies it first (own_names).
  std::shared_ptr<Names> names_;
  std::vector<uint64_t> counts_;  // every group's items in order
  size_t last_group_ = 0;
  size_t last_item_ = 0;  // within last_group_
};

// Declares the tables' states ("Machine.State") and legal transitions
// ("Machine A->B") and counts what the tables counted: a transition by its
// count, a state by the transitions taken into or out of it (a machine's
// first state is only ever left).
void add_transition_coverage(Coverage& into, const std::vector<TransitionTable>& tables);

}  // namespace tensorwire
