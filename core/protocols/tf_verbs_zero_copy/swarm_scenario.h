// The zero-copy verbs protocol's swarm scenarios (`tensorwire check --swarm`):
// small "tensors" workloads drawn at random, each a whole scenario file.
#pragma once

#include <string>

#include "core/protocols/swarm_draw.h"

namespace tensorwire::tf_verbs {

// A scenario made of `d`'s picks (a larger draw reaches further), as TOML
// text without its name: 2-4 ranks with 0-2 GPUs each (GPUDirect on all, none or some),
// 1-5 tensors of every dtype (strings included) in host, pageable or GPU
// memory, sizes on and just off the memory pool's size classes, empty and
// dead tensors, Send/Recv orders and offsets, 1-4 steps with meta-data
// changes between them (shape, dtype, is_dead, string size), and sometimes
// a short send queue, a small control ring or a request timeout.
std::string draw_swarm_scenario(SwarmDraw& d);

}  // namespace tensorwire::tf_verbs
