// What a broadcast run found, kept in its account: the plan it ran (algorithm,
// transfer graph, the pipelined lower bound), when each destination held every
// byte, and the bytes each link carried; the physical bound and every
// planner's plan bound beside it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/protocols/realm_broadcast/broadcast_workload.h"
#include "core/protocols/realm_broadcast/physical_bound.h"
#include "core/protocols/realm_broadcast/pipelined_bound.h"
#include "core/protocols/realm_broadcast/planner_comparison.h"
#include "core/protocols/realm_broadcast/transfer_graph.h"

namespace tensorwire::collectives {

struct BroadcastDestinationResult {
  uint32_t buffer = 0;
  std::string memory;   // "node3/gpu1"
  TimeNs done_ns = -1;  // when it held every byte; -1: never
  uint32_t depth = 0;   // copies from the source
};

struct BroadcastLinkResult {
  std::string link;  // "node0/nic tx"
  uint64_t bytes = 0;
  TimeNs busy_ns = 0;  // bytes / bandwidth
};

struct BroadcastResult {
  uint64_t bytes = 0;
  std::string algorithm;  // "hierarchical radix tree"
  BroadcastOptions options;
  TransferGraph graph;
  std::vector<std::string> link_names;  // by LinkId
  TimeNs finish_ns = 0;                 // the last destination's done time
  // The done times are wall times each rank measured on its own clock (a
  // world of one process per rank, on a real device), not simulated ones.
  bool measured = false;
  std::vector<BroadcastDestinationResult> destinations;
  std::vector<BroadcastLinkResult> links;  // links that carried bytes
  PipelinedBound bound;
  PhysicalBound physical;              // what no plan can beat on this cluster
  std::vector<PlannerBound> planners;  // every algorithm's plan bound, for comparison
  std::map<uint32_t, TimeNs> copy_first_busy_ns;  // by copy id

  size_t destinations_done() const {
    size_t done = 0;
    for (const BroadcastDestinationResult& d : destinations) done += d.done_ns >= 0 ? 1 : 0;
    return done;
  }
};

}  // namespace tensorwire::collectives
