// The PhaseGate (core/workload/phase_gate.h) of a rank in its own process: the
// end of each phase is a coordinator barrier, driven from the progress loop
// without blocking (TcpCoordinator::start_barrier / poll_barrier) so the rank
// keeps serving its peers while it waits, and bounded by `timeout`. A rank
// that died, or one that never arrives, fails the barrier on every other
// rank: the coordinator sees a closed connection at once, or the deadline
// passes.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "launch/tcp_coordinator.h"
#include "core/workload/phase_gate.h"

namespace tensorwire::launch {

class CoordinatorPhaseGate final : public PhaseGate {
 public:
  CoordinatorPhaseGate(TcpCoordinator& coordinator, std::chrono::milliseconds timeout)
      : coordinator_(coordinator), timeout_(timeout) {}

  void phase_done(uint64_t step_id, size_t phase_index,
                  std::function<void(Status)> agreed) override;

  // From the progress loop: hands the barrier's result to the driver once it
  // is in. Returns true when it did.
  bool poll();
  bool waiting() const { return agreed_ != nullptr; }
  // Phases agreed so far.
  uint64_t agreed_phases() const { return agreed_phases_; }

 private:
  TcpCoordinator& coordinator_;
  std::chrono::milliseconds timeout_;
  std::function<void(Status)> agreed_;
  std::optional<Status> failed_to_start_;
  uint64_t step_id_ = 0;
  size_t phase_index_ = 0;
  uint64_t agreed_phases_ = 0;
};

}  // namespace tensorwire::launch
