// The legacy verbs protocol's small scenarios for `tensorwire check --swarm`.
#pragma once

#include <string>

#include "core/protocols/swarm_draw.h"

namespace tensorwire::tf_legacy {

// A scenario's text (all but its name) from `draw`'s picks alone: 2 to 4
// ranks, GPUs with and without GPUDirect, numeric tensors from empty to a few
// hundred elements, dead ones, every call order, shape changes (buffers that
// grow and shrink), a small send queue now and then, and the options.
// Receiver-not-ready is an error in every one (rnr_retry_count = 0).
std::string draw_swarm_scenario(SwarmDraw& draw);

}  // namespace tensorwire::tf_legacy
