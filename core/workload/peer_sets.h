// Which ranks each rank exchanges tensors with, from the workload: what a
// protocol needs to set up per-peer state (queue pairs' receives, rings) for
// only the pairs that communicate, all of it before the first message, so a
// receive is always posted before its peer's first send lands.
#pragma once

#include <cstdint>
#include <vector>

#include "core/nic.h"
#include "core/status.h"
#include "core/workload/workload.h"

namespace tensorwire {

// For each of `ranks` ranks, the other ranks it sends to or receives from in
// any step, in increasing order; a pair is in both ranks' sets. An error
// naming the transfer when one names a rank outside [0, ranks).
Result<std::vector<std::vector<RankId>>> peer_sets_of(const Workload& workload, uint32_t ranks);

}  // namespace tensorwire
