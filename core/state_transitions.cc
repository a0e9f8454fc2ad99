#include "core/state_transitions.h"

#include <utility>

#include "core/assert.h"

namespace tensorwire {

TransitionTable::TransitionTable(std::string machine, std::vector<std::string> states)
    : machine_(std::move(machine)), states_(std::move(states)),
      allowed_(states_.size() * states_.size(), 0), taken_(states_.size() * states_.size(), 0) {
  TW_ASSERT(!machine_.empty());
  TW_ASSERT(!states_.empty());
}

size_t TransitionTable::index(size_t from, size_t to) const {
  TW_ASSERT(from < states_.size());
  TW_ASSERT(to < states_.size());
  return from * states_.size() + to;
}

void TransitionTable::allow(size_t from, size_t to) { allowed_[index(from, to)] = 1; }

bool TransitionTable::allowed(size_t from, size_t to) const { return allowed_[index(from, to)] != 0; }

void TransitionTable::count(size_t from, size_t to, uint64_t times) {
  const size_t i = index(from, to);
  TW_ASSERT_MSG(allowed_[i] != 0, "a state machine took a transition its table forbids");
  taken_[i] += times;
}

void TransitionTable::add(const TransitionTable& other) {
  TW_ASSERT(other.machine_ == machine_);
  TW_ASSERT(other.states_ == states_);
  for (size_t i = 0; i < taken_.size(); ++i) {
    taken_[i] += other.taken_[i];
    allowed_[i] = allowed_[i] | other.allowed_[i];
  }
}

const std::string& TransitionTable::state_name(size_t state) const {
  TW_ASSERT(state < states_.size());
  return states_[state];
}

uint64_t TransitionTable::taken(size_t from, size_t to) const { return taken_[index(from, to)]; }

std::string TransitionTable::covered() const {
  std::string out;
  for (size_t from = 0; from < states_.size(); ++from) {
    for (size_t to = 0; to < states_.size(); ++to) {
      const uint64_t n = taken(from, to);
      if (n == 0) continue;
      if (!out.empty()) out += ", ";
      out += states_[from] + "->" + states_[to] + " (" + std::to_string(n) + ")";
    }
  }
  return out.empty() ? "none" : out;
}

std::string TransitionTable::uncovered() const {
  std::string out;
  for (size_t from = 0; from < states_.size(); ++from) {
    for (size_t to = 0; to < states_.size(); ++to) {
      if (!allowed(from, to) || taken(from, to) != 0) continue;
      if (!out.empty()) out += ", ";
      out += states_[from] + "->" + states_[to];
    }
  }
  return out.empty() ? "none" : out;
}

void add_transition_tables(std::vector<TransitionTable>& into,
                           const std::vector<TransitionTable>& from) {
  for (const TransitionTable& t : from) {
    bool found = false;
    for (TransitionTable& i : into) {
      if (i.machine() != t.machine()) continue;
      i.add(t);
      found = true;
      break;
    }
    if (!found) into.push_back(t);
  }
}

}  // namespace tensorwire
