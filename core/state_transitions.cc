#include "core/state_transitions.h"

#include <utility>

#include "core/assert.h"

namespace tensorwire {

TransitionTable::TransitionTable() {
  static const std::shared_ptr<Shape> kEmpty = std::make_shared<Shape>();
  shape_ = kEmpty;
}

TransitionTable::TransitionTable(std::string machine, std::vector<std::string> states)
    : taken_(states.size() * states.size(), 0) {
  TW_ASSERT(!machine.empty());
  TW_ASSERT(!states.empty());
  const size_t n = states.size();
  shape_ = std::make_shared<Shape>(
      Shape{std::move(machine), std::move(states), std::vector<uint8_t>(n * n, 0)});
}

TransitionTable::Shape& TransitionTable::own_shape() {
  if (shape_.use_count() != 1) shape_ = std::make_shared<Shape>(*shape_);
  // Held by this table alone: no copy sees the change.
  return *shape_;
}

size_t TransitionTable::index(size_t from, size_t to) const {
  const size_t n = shape_->states.size();
  TW_ASSERT_MSG(from < n && to < n, "a transition is between the machine's states");
  return from * n + to;
}

void TransitionTable::allow(size_t from, size_t to) {
  const size_t i = index(from, to);
  if (shape_->allowed[i] == 0) own_shape().allowed[i] = 1;
}

bool TransitionTable::allowed(size_t from, size_t to) const {
  return shape_->allowed[index(from, to)] != 0;
}

void TransitionTable::count(size_t from, size_t to, uint64_t times) {
  const size_t i = index(from, to);
  TW_ASSERT_MSG(shape_->allowed[i] != 0, "a state machine took a transition its table forbids");
  taken_[i] += times;
}

void TransitionTable::add(const TransitionTable& other) {
  if (other.shape_ != shape_) {
    TW_ASSERT(other.shape_->machine == shape_->machine);
    TW_ASSERT(other.shape_->states == shape_->states);
    for (size_t i = 0; i < taken_.size(); ++i) {
      if (other.shape_->allowed[i] != 0 && shape_->allowed[i] == 0) own_shape().allowed[i] = 1;
    }
  }
  for (size_t i = 0; i < taken_.size(); ++i) taken_[i] += other.taken_[i];
}

const std::string& TransitionTable::state_name(size_t state) const {
  TW_ASSERT(state < shape_->states.size());
  return shape_->states[state];
}

uint64_t TransitionTable::taken(size_t from, size_t to) const { return taken_[index(from, to)]; }

std::string TransitionTable::covered() const {
  std::string out;
  const std::vector<std::string>& states = shape_->states;
  for (size_t from = 0; from < states.size(); ++from) {
    for (size_t to = 0; to < states.size(); ++to) {
      const uint64_t n = taken(from, to);
      if (n == 0) continue;
      if (!out.empty()) out += ", ";
      out += states[from] + "->" + states[to] + " (" + std::to_string(n) + ")";
    }
  }
  return out.empty() ? "none" : out;
}

std::string TransitionTable::uncovered() const {
  std::string out;
  const std::vector<std::string>& states = shape_->states;
  for (size_t from = 0; from < states.size(); ++from) {
    for (size_t to = 0; to < states.size(); ++to) {
      if (!allowed(from, to) || taken(from, to) != 0) continue;
      if (!out.empty()) out += ", ";
      out += states[from] + "->" + states[to];
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
