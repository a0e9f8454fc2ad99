// Realm's collective broadcast in the protocol registry:
// [protocol] name = "realm_collective_broadcast", for [workload] kind =
// "broadcast". The planner's options live with the workload (they describe
// the broadcast asked for); the protocol's own options are its planted bug.
#pragma once

#include <any>

#include "core/protocols/realm_broadcast/planted_collective_bug.h"
#include "core/protocols/protocol_descriptor.h"

namespace tensorwire::collectives {

struct RealmBroadcastOptions {
  // Never read from a scenario file: set by `tensorwire check --plant-bug`.
  PlantedCollectiveBug planted_bug = PlantedCollectiveBug::kNone;
};

const ProtocolDescriptor& realm_collective_broadcast_protocol();

// The options inside a ProtocolConfig's std::any (asserts the type).
RealmBroadcastOptions& options_of(std::any& options);
const RealmBroadcastOptions& options_of(const std::any& options);

}  // namespace tensorwire::collectives
