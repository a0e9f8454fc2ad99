// A protocol state machine's transition table: its states' names, the
// transitions it allows, and how often each was taken. Protocols count their
// transitions here; the model checker sums them over runs and reports the
// coverage without knowing which protocol it checked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tensorwire {

class TransitionTable {
 public:
  TransitionTable() = default;
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

  const std::string& machine() const { return machine_; }
  size_t state_count() const { return states_.size(); }
  const std::string& state_name(size_t state) const;
  uint64_t taken(size_t from, size_t to) const;
  // "Idle->Requested (12), Requested->Finished (3)", or "none".
  std::string covered() const;
  // Legal transitions never taken, "A->B, C->D", or "none".
  std::string uncovered() const;

 private:
  size_t index(size_t from, size_t to) const;

  std::string machine_;
  std::vector<std::string> states_;
  std::vector<uint8_t> allowed_;   // [from * n + to]
  std::vector<uint64_t> taken_;    // [from * n + to]
};

// Adds `from`'s tables into `into`, matched by machine name (appended when
// `into` has none of that name).
void add_transition_tables(std::vector<TransitionTable>& into,
                           const std::vector<TransitionTable>& from);

}  // namespace tensorwire
