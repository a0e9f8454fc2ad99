#include "launch/coordinator_phase_gate.h"

#include <string>
#include <utility>

namespace tensorwire::launch {

void CoordinatorPhaseGate::phase_done(uint64_t step_id, size_t phase_index,
                                      std::function<void(Status)> agreed) {
  step_id_ = step_id;
  phase_index_ = phase_index;
  agreed_ = std::move(agreed);
  Status st = coordinator_.start_barrier(timeout_);
  if (!st.is_ok()) failed_to_start_ = st;
}

bool CoordinatorPhaseGate::poll() {
  if (agreed_ == nullptr) return false;
  std::optional<Status> result = failed_to_start_;
  failed_to_start_.reset();
  if (!result) result = coordinator_.poll_barrier();
  if (!result) return false;
  Status st = std::move(*result);
  if (!st.is_ok()) {
    st = Status(st.code(), "step " + std::to_string(step_id_) + " phase " +
                               std::to_string(phase_index_ + 1) +
                               ": the ranks could not agree that the phase ended: " +
                               st.message());
  } else {
    ++agreed_phases_;
  }
  // The driver may start the next phase (and call phase_done) from here.
  std::function<void(Status)> agreed = std::move(agreed_);
  agreed_ = nullptr;
  agreed(std::move(st));
  return true;
}

}  // namespace tensorwire::launch
