// A scenario file, parsed and validated: the cluster, the protocol and its
// options, the workload, the seed. Loading never half-succeeds: either every
// key is valid or a ScenarioError names file:line:column and the key.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <optional>

#include "core/cluster.h"
#include "core/protocols/realm_broadcast/broadcast_workload.h"
#include "core/protocols/protocol_registry.h"
#include "core/workload/workload.h"

namespace tensorwire {

struct Scenario {
  std::string name;
  std::string description;
  std::string source_path;  // the file it came from ("<string>" when parsed from text)
  uint64_t seed = 1;
  bool payload = true;      // [run] mode = "payload" | "timing"
  Cluster cluster;
  // [protocol]: a registered protocol's name and its options.
  ProtocolConfig protocol = default_protocol_config();
  Workload workload;  // kind "tensors" / "parameter_server"
  // kind "broadcast" (a collective protocol); `workload` is then empty.
  std::optional<collectives::BroadcastWorkload> broadcast;
};

// Thrown by the loader; what() is "file:line:column: key: what is wrong".
class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tensorwire
