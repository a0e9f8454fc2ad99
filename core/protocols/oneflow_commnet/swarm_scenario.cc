#include "core/protocols/oneflow_commnet/swarm_scenario.h"

#include <ostream>

#include "core/protocols/swarm_tensors_scenario.h"

namespace tensorwire::oneflow {

std::string draw_swarm_scenario(SwarmDraw& draw) {
  return draw_tensors_swarm_scenario(draw, [](SwarmDraw& d, std::ostream& t) {
    t << "[protocol]\nname = \"oneflow_commnet\"\n[protocol.oneflow_commnet]\n"
      << "receive_pool_size = " << d.between(4, 8) << "\neager_max_bytes = " << d.between(0, 3) * 32
      << "\nread_chunk_bytes = " << d.between(1, 8) * 64
      << "\nmax_reads_in_flight = " << d.between(1, 3) << "\n";
  });
}

}  // namespace tensorwire::oneflow
