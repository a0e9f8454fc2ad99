// Options of the zero-copy verbs protocol, set from a scenario's [protocol] table.
#pragma once

#include <cstdint>

#include "core/clock.h"

namespace tensorwire::tf_verbs {

struct TfVerbsOptions {
  // Receive buffers pre-posted per peer for control messages and write-with-imm
  // completions (the original had one message buffer per direction).
  uint32_t control_ring_size = 64;
  // A Recv that gets no answer for this long fails with kAborted-like timeout
  // error; 0 disables (faults still surface through QP errors).
  TimeNs request_timeout_ns = 0;
};

}  // namespace tensorwire::tf_verbs
