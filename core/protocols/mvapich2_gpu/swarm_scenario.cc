#include "core/protocols/mvapich2_gpu/swarm_scenario.h"

#include <ostream>

#include "core/protocols/swarm_tensors_scenario.h"

namespace tensorwire::mvapich2 {

std::string draw_swarm_scenario(SwarmDraw& draw) {
  return draw_tensors_swarm_scenario(draw, [](SwarmDraw& d, std::ostream& t) {
    t << "[protocol]\nname = \"mvapich2_gpu\"\n[protocol.mvapich2_gpu]\n"
      << "staging = \"" << (d.one_in(3) ? "naive" : "pipelined") << "\"\nreceive_pool_size = "
      << d.between(4, 8) << "\neager_max_bytes = " << d.between(0, 3) * 32
      << "\nblock_bytes = " << d.between(1, 8) * 64 << "\nvbuf_count = " << d.between(1, 3)
      << "\n";
  });
}

}  // namespace tensorwire::mvapich2
