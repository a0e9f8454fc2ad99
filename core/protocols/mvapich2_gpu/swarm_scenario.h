// MVAPICH2-GPU's small scenarios for `tensorwire check --swarm`.
#pragma once

#include <string>

#include "core/protocols/swarm_draw.h"

namespace tensorwire::mvapich2 {

// A scenario's text (all but its name) from `draw`'s picks alone: 2 to 4
// ranks, GPUs with and without GPUDirect, numeric tensors from empty to
// several blocks, dead ones, every call order, shape changes, and the options
// (staging, eager threshold, block size, vbuf count, pool size).
// Receiver-not-ready is an error in every one (rnr_retry_count = 0).
std::string draw_swarm_scenario(SwarmDraw& draw);

}  // namespace tensorwire::mvapich2
