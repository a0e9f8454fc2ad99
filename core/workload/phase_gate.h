// How the driver of ONE rank's part of a workload (several processes, one
// rank each) agrees with the other ranks that a phase has ended. In one
// process the driver sees every Recv and needs no gate; across processes a
// rank only knows its own Recvs, and it must keep serving its peers (their
// requests for the tensors it sends) until every rank is done.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/status.h"

namespace tensorwire {

class PhaseGate {
 public:
  virtual ~PhaseGate() = default;
  // This rank's Recvs of the phase have all finished. The gate calls `agreed`
  // later, from the rank's progress loop, with ok once every rank has got this
  // far, or with an error (a rank died, the deadline passed) that ends the run.
  // It must not call `agreed` from inside phase_done.
  virtual void phase_done(uint64_t step_id, size_t phase_index,
                          std::function<void(Status)> agreed) = 0;
};

}  // namespace tensorwire
