// The collective broadcast's swarm scenarios (`tensorwire check --swarm`):
// small "broadcast" workloads drawn at random, each a whole scenario file.
#pragma once

#include <string>

#include "core/protocols/swarm_draw.h"

namespace tensorwire::collectives {

// A scenario made of `d`'s picks (a larger draw reaches further), as TOML
// text without its name: 2-4 nodes with 0-2 GPUs each (GPUDirect on all, none or some;
// sometimes NVLink), a message of 0 B to 48 KiB (on and off chunk
// multiples), any source, a list of destinations (repeats and the source's
// own memory included) or all/all_hosts/all_gpus, every algorithm with radixes
// 1-3 across and 0-3 inside nodes, and chunks, IB rings of one to four
// chunks, pool sizes and in-flight limits that make producers wait.
std::string draw_swarm_scenario(SwarmDraw& d);

}  // namespace tensorwire::collectives
