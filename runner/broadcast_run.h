// Runs a broadcast scenario on the simulator: plans the transfer graph, runs
// one TransferOperation per rank, checks the invariants as it goes and every
// destination's bytes at the end (payload mode), and reports what happened.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/transport_stats.h"
#include "core/collectives/cluster_topology.h"
#include "core/collectives/pipelined_bound.h"
#include "core/collectives/transfer_graph.h"
#include "core/collectives/transfer_operation.h"
#include "core/trace_sink.h"
#include "runner/simulation_run.h"
#include "scenario/broadcast_section.h"
#include "scenario/scenario.h"

namespace tensorwire {

struct BroadcastDestinationResult {
  uint32_t buffer = 0;
  std::string memory;    // "node3/gpu1"
  TimeNs done_ns = -1;   // when it held every byte; -1: never
  uint32_t depth = 0;    // copies from the source
};

struct BroadcastLinkResult {
  std::string link;  // "node0/nic tx"
  uint64_t bytes = 0;
  TimeNs busy_ns = 0;  // bytes / bandwidth
};

struct BroadcastReport {
  std::string scenario_name;
  std::string scenario_path;
  uint64_t seed = 0;
  bool payload = true;
  uint32_t ranks = 0;
  uint64_t bytes = 0;
  std::string algorithm;  // "hierarchical radix tree"
  collectives::BroadcastOptions options;
  collectives::TransferGraph graph;
  std::vector<std::string> link_names;  // by LinkId
  TimeNs simulated_end_ns = 0;
  TimeNs finish_ns = 0;  // the last destination's done time
  uint64_t events_processed = 0;
  std::vector<BroadcastDestinationResult> destinations;
  std::vector<BroadcastLinkResult> links;  // links that carried bytes
  collectives::PipelinedBound bound;
  uint64_t peak_ib_bytes = 0;  // over the cluster
  uint64_t chunks_issued = 0;
  uint64_t messages_sent = 0;
  std::map<uint32_t, TimeNs> copy_first_busy_ns;  // by copy id
  TransportStats total_stats;
  std::vector<std::string> problems;

  bool passed() const { return problems.empty(); }
};

// Plans only (no simulation): for `tensorwire plan` without timings and for
// planner benchmarks. Errors are bad input (an impossible pool, say).
Result<collectives::TransferGraph> plan_scenario_broadcast(const Scenario& scenario);

// Runs with options.scheduler, observer and on_attached hooks (the model
// checker's hooks). `bug`, where set, overrides the workload's planted_bug.
BroadcastReport run_broadcast(const Scenario& scenario, const SimulationOptions& options,
                              TraceSink& trace,
                              collectives::PlantedCollectiveBug bug = collectives::PlantedCollectiveBug::kNone);

}  // namespace tensorwire
