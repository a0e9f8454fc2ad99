// What a run did and found, whatever its protocol, workload and backend: the
// one schema the summary, the results JSON, compare and the model checker read.
// A point-to-point workload fills `workload` (steps of tensors); a collective
// protocol leaves its own account in `collective` (it renders its summary
// section and its results keys itself); everything else is common:
// the run's time, the transport's and the protocol's named counters, the state
// machines' transitions and the typed problems.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/collective.h"
#include "core/coverage.h"
#include "core/problem.h"
#include "core/protocol_counters.h"
#include "core/resource_usage.h"
#include "core/protocols/protocol_registry.h"
#include "core/state_transitions.h"
#include "core/transport_stats.h"
#include "core/workload/workload_driver.h"

namespace tensorwire {

struct RunReport {
  std::string scenario_name;
  std::string scenario_path;
  std::string backend = "sim";  // "sim" or "verbs"
  std::string protocol;         // the registry's name ("tf_verbs_zero_copy")
  std::string workload_kind;    // the scenario's [workload] kind ("tensors", ...)
  uint64_t seed = 0;
  bool payload = true;
  uint32_t ranks = 0;
  // The run's end on its backend's clock: simulated time on the simulator;
  // on verbs the wall time the run took (wall_time is then true).
  TimeNs end_ns = 0;
  bool wall_time = false;
  uint64_t events_processed = 0;  // simulator events (0 on verbs)

  // A point-to-point workload: its steps of tensors, and the payload bytes all
  // ports sent during each step, in step order. Steps do not overlap (the
  // driver starts a step when the previous one has finished), so the wire
  // counter's growth between two step ends belongs to one step.
  WorkloadResult workload;
  std::vector<uint64_t> step_wire_bytes;
  // A collective workload: the protocol's account of its run (nullptr for a
  // point-to-point one, and for a collective that could not be planned).
  std::shared_ptr<const CollectiveAccount> collective;

  // How busy every port side, copy engine and CPU was (core/resource_usage.h):
  // over the whole run, and for a point-to-point workload over its finished
  // steps (from the driver's start to the last finished step's end). Empty
  // where the backend measures none (verbs).
  std::vector<ResourceUsage> resources;
  std::vector<ResourceUsage> step_resources;
  // The cluster's jitter model in words; empty when it is off.
  std::string jitter;

  std::vector<TransportStats> rank_stats;
  TransportStats total_stats;
  std::vector<ProtocolCounters> protocol_counters;  // per rank
  // The protocol's state machines' transitions, summed over the ranks.
  std::vector<TransitionTable> transitions;
  // What the protocol declares worth reaching and what this run reached of it
  // (core/coverage.h), summed over the ranks; empty where the backend does not
  // gather it (verbs).
  Coverage coverage;
  // What went wrong, one typed problem each (empty when every check passed).
  std::vector<Problem> problems;

  bool passed() const { return problems.empty(); }
  // Run by a collective protocol (with or without an account: a collective
  // that could not be planned has none).
  bool collective_run() const {
    const ProtocolDescriptor* p = find_protocol(protocol);
    return p != nullptr && p->shape() == ProtocolShape::kCollective;
  }
};

}  // namespace tensorwire
