// How a simulation runs: its seed and whether buffers carry bytes. The
// cluster it simulates is core/cluster.h.
#pragma once

#include <cstdint>

#include "core/cluster.h"

namespace tensorwire::sim {

struct SimOptions {
  uint64_t seed = 1;
  bool payload = true;  // false: timing-only, buffers have no bytes
};

}  // namespace tensorwire::sim
