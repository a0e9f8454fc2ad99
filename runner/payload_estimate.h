// How much memory a payload-mode run of a scenario holds, estimated before it
// runs from the workload and what the protocol says of its own buffers, so
// that a run too big for the machine is refused before anything is allocated.
// Protocol-neutral: a point-to-point protocol answers per transfer
// (ProtocolDescriptor::transfer_buffer_bytes), a collective one for its whole
// workload (CollectiveProtocol::payload_bytes).
#pragma once

#include <cstdint>

#include "scenario/scenario.h"

namespace tensorwire {

// Bytes over all ranks a payload-mode run of `scenario` holds at its peak,
// about: for a point-to-point workload, every distinct source tensor (the
// harness keeps them from step to step) plus the largest step's destinations
// and protocol buffers; for a collective one, what the protocol says. The
// harness itself adds only bounded pieces (16 MiB) to that.
uint64_t payload_bytes_estimate(const Scenario& scenario);

}  // namespace tensorwire
