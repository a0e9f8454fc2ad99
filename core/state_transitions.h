// A protocol state machine's transition table: its states' names, the
// transitions it allows, and how often each was taken. Protocols count their
// transitions here; the model checker sums them over runs and reports the
// coverage without knowing which protocol it checked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tensorwire {

class TransitionTable {
 public:
  TransitionTable();
  // `machine` names the state machine ("RdmaTensorRequest"); `states` its
  // states, in the order the protocol numbers them.
  TransitionTable(std::string machine, std::vector<std::string> states);

  // Declares from -> to legal. Only legal transitions may be counted.
  void allow(size_t from, size_t to);
  bool allowed(size_t from, size_t to) const;
  // Counts `times` from -> to; asserts it is legal (an illegal transition is
  // a protocol bug, caught where it happens).
  void count(size_t from, size_t to, uint64_t times = 1);
  // Adds another run's counts of the same machine.
  void add(const TransitionTable& other);

  const std::string& machine() const { return shape_->machine; }
  size_t state_count() const { return shape_->states.size(); }
  const std::string& state_name(size_t state) const;
  uint64_t taken(size_t from, size_t to) const;
  // "Idle->Requested (12), Requested->Finished (3)", or "none".
  std::string covered() const;
  // Legal transitions never taken, "A->B, C->D", or "none".
  std::string uncovered() const;

 private:
  // The machine, its states and its legal transitions: shared by copies, so
  // that a protocol copies a table built once and only counts into it (a
  // model checker gathers every rank's tables after every execution).
  struct Shape {
    std::string machine;
    std::vector<std::string> states;
    std::vector<uint8_t> allowed;  // [from * n + to]
  };
  size_t index(size_t from, size_t to) const;
  Shape& own_shape();  // copy-on-write: the shape this table alone holds

  // Never changed while shared: own_shape() copies it first.
  std::shared_ptr<Shape> shape_;
  std::vector<uint64_t> taken_;    // [from * n + to]
};

// Adds `from`'s tables into `into`, matched by machine name (appended when
// `into` has none of that name).
void add_transition_tables(std::vector<TransitionTable>& into,
                           const std::vector<TransitionTable>& from);

}  // namespace tensorwire
