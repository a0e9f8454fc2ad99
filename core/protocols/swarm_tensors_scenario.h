// The small `[workload] kind = "tensors"` scenarios that point-to-point
// protocols draw for `tensorwire check --swarm`: one drawing, shared, with
// each protocol writing only its own `[protocol]` tables (the head of the
// scenario ends with the protocol's own table, where a drawn `channels` goes).
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "core/protocols/swarm_draw.h"

namespace tensorwire {

// Writes the scenario's `[protocol]` and `[protocol.<name>]` tables from its
// own draws.
using SwarmProtocolTables = std::function<void(SwarmDraw&, std::ostream&)>;

// A scenario's text (all but its name) from `draw`'s picks alone: 2 to 4
// ranks with 0 to 2 GPUs each, with and without GPUDirect, sometimes a short
// send queue, receiver-not-ready an error (rnr_retry_count = 0); 1 to 3 steps
// of 1 to 4 numeric tensors from empty to a few hundred elements, in host,
// pageable or GPU memory, dead ones, every call order; shape changes. The
// tensors' draws come last, each tensor's in a fixed number, so that fewer
// tensors or steps leave the other draws as they were (shrinking).
std::string draw_tensors_swarm_scenario(SwarmDraw& draw, const SwarmProtocolTables& protocol);

// The protocol's `channels` key (core/channel_peers.h), drawn: usually left
// out (a channel to each rank the workload pairs with), sometimes a channel
// to every rank. A line for the end of the protocol's own table.
std::string draw_channels(SwarmDraw& draw);

}  // namespace tensorwire
