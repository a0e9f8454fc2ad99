// A scenario file, parsed and validated: the cluster, the protocol and its
// options, the workload, the seed. Loading never half-succeeds: either every
// key is valid or a ScenarioError names file:line:column and the key.
#pragma once

#include <any>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cluster.h"
#include "core/protocols/protocol_registry.h"
#include "core/workload/workload.h"

namespace tensorwire {

struct Scenario {
  std::string name;
  std::string description;
  std::string source_path;  // the file it came from ("<string>" when parsed from text)
  uint64_t seed = 1;
  bool payload = true;      // [run] mode = "payload" | "timing"
  // What one rank's memory may hold in payload mode; 0: the backend's default.
  // Reaching it is a limit of the harness (bad input), never a protocol error.
  uint64_t payload_limit_bytes_per_rank = 0;
  // What all ranks' memory together may hold in payload mode; 0: no limit.
  // The command line sets it (--memory-limit); it travels with the scenario
  // so that every run made of it (the model checker's executions and replays
  // included) is bounded alike.
  uint64_t payload_limit_bytes_total = 0;
  Cluster cluster;
  // [protocol]: a registered protocol's name and its options.
  ProtocolConfig protocol = default_protocol_config();
  // The [workload]: its kind always; its steps of tensors for a
  // point-to-point protocol ("tensors", "parameter_server").
  Workload workload;
  // For a collective protocol: its [workload] as the protocol read it (its
  // own type, see core/collective.h); empty otherwise.
  std::any collective_workload;
};

// Thrown by the loader; what() is "file:line:column: key: what is wrong".
class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tensorwire
