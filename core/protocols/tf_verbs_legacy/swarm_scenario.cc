#include "core/protocols/tf_verbs_legacy/swarm_scenario.h"

#include <ostream>

#include "core/protocols/swarm_tensors_scenario.h"

namespace tensorwire::tf_legacy {

std::string draw_swarm_scenario(SwarmDraw& draw) {
  return draw_tensors_swarm_scenario(draw, [](SwarmDraw& d, std::ostream& t) {
    // Receives: one message, one ACK and a write per tensor buffer at most in
    // flight; 4 tensors need 6.
    t << "[protocol]\nname = \"tf_verbs_legacy\"\n[protocol.tf_verbs_legacy]\n"
      << "receives_per_peer = " << d.between(6, 8) << "\ntensor_buffers_per_peer = "
      << d.between(4, 6) << "\n";
  });
}

}  // namespace tensorwire::tf_legacy
