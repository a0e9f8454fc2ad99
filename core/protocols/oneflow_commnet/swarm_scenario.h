// CommNet's small scenarios for `tensorwire check --swarm`.
#pragma once

#include <string>

#include "core/protocols/swarm_draw.h"

namespace tensorwire::oneflow {

// A scenario's text (all but its name) from `draw`'s picks alone: 2 to 4
// ranks, GPUs with and without GPUDirect, numeric tensors from empty to a few
// read chunks, dead ones, every call order, shape and liveness changes, and
// the options (pool size, inline threshold, chunk size, reads in flight).
// Receiver-not-ready is an error in every one (rnr_retry_count = 0).
std::string draw_swarm_scenario(SwarmDraw& draw);

}  // namespace tensorwire::oneflow
