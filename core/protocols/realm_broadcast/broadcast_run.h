// Runs a broadcast in a backend's world (core/collective.h): plans the
// transfer graph, runs one TransferOperation per rank until the world is idle,
// checks the invariants as it goes and every destination's bytes at the end
// (payload mode), and gives back the problems, the counters and its account.
#pragma once

#include "core/collective.h"

namespace tensorwire::collectives {

// request.workload holds a BroadcastWorkload, request.options the protocol's
// RealmBroadcastOptions (its planted bug, if any).
CollectiveOutcome run_broadcast(CollectiveWorld& world, const CollectiveRequest& request);

}  // namespace tensorwire::collectives
