// State every part of the simulator shares: the configuration, the one event
// queue, per-rank counters and CPU timelines, the trace and the observer.
// Owned by Simulator::Impl; the parts hold a reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backend_sim/dma_sanitizer.h"
#include "backend_sim/event_queue.h"
#include "backend_sim/fabric.h"
#include "backend_sim/jitter_source.h"
#include "backend_sim/resource_meter.h"
#include "backend_sim/sim_config.h"
#include "backend_sim/sim_observer.h"
#include "backend_sim/transfer_ledger.h"
#include "core/transport_stats.h"
#include "core/trace_sink.h"

namespace tensorwire::sim {

// Nanoseconds to move `bytes` at `bytes_per_s`, rounded up so that a
// transfer never finishes early.
inline TimeNs transfer_time_ns(double bytes, double bytes_per_s) {
  if (bytes <= 0) return 0;
  return static_cast<TimeNs>(std::ceil(bytes * 1e9 / bytes_per_s));
}

struct SimContext {
  SimContext(Cluster c, SimOptions o, TraceSink& t, bool tracing_on)
      : cluster(std::move(c)), options(o), trace(t), tracing(tracing_on),
        stats(cluster.nodes), cpu_free_ns(cluster.nodes, 0), crashed(cluster.nodes, false),
        failing_registrations(cluster.nodes, 0), fabric(cluster), sanitizer(cluster.nodes),
        meter(cluster, fabric),
        jitter(cluster.jitter, options.seed), ledger(options.transfer_ledger) {
    events.set_state_digests(options.state_digests);
  }

  Cluster cluster;
  SimOptions options;
  EventQueue events;
  TraceSink& trace;
  bool tracing;  // false with a NullTraceSink: skip building trace strings
  SimObserver* observer = nullptr;
  std::vector<TransportStats> stats;        // per rank
  // A rank's CPU is busy with registrations and memcpys until this time; work
  // it posts meanwhile starts when the CPU is free again.
  std::vector<TimeNs> cpu_free_ns;
  std::vector<bool> crashed;
  // The run's report is taken (Simulator::report_taken): what is left is the
  // teardown, which no one observes. Frees and deregistrations then do only
  // what outlives the world (pooled bytes go back to the pool) and leave the
  // indexes, the sanitizer and the registry, which go with the world.
  bool tearing_down = false;
  // Registrations still to fail on each rank (an injected fault).
  std::vector<uint32_t> failing_registrations;
  // Payload bytes every rank's memory holds together, against
  // options.payload_limit_bytes_total (SimMemorySpace keeps it).
  uint64_t payload_bytes_held_total = 0;
  // The resources flows cross and their routes (the cluster's topology).
  Fabric fabric;
  // Every in-flight DMA's ranges, checked against frees, deregistrations, CPU
  // accesses and other DMAs: always on, in run and under check.
  DmaSanitizer sanitizer;
  // How busy each port side, copy engine and CPU was (for "where the time went").
  ResourceMeter meter;
  // The cluster's jitter model's draws (off unless the scenario asks).
  JitterSource jitter;
  // The message (RcTransport's work request sequence number) whose completion
  // the running handler is handling, 0 outside one: what the rank posts now
  // was caused by it (the trace's flow arrows). Only kept while tracing.
  uint64_t cause_seq = 0;
  // The tensor transfer the running code works for (core/transfer_attribution.h),
  // 0 for none: what is posted now is tagged with it, and the handlers of its
  // completions run under it again. Always kept (the per-transfer breakdown).
  uint64_t transfer_tag = 0;
  TransferLedger ledger;

  TimeNs now() const { return events.now_ns(); }
  TimeNs cpu_ready_ns(uint32_t rank) const { return std::max(now(), cpu_free_ns[rank]); }
  // Occupies rank's CPU for cost_ns starting when it is free; returns the end.
  TimeNs charge_cpu(uint32_t rank, TimeNs cost_ns, const char* what) {
    const TimeNs start = cpu_ready_ns(rank);
    // Saturating: absurd but loadable costs must not overflow the clock.
    constexpr TimeNs kForever = std::numeric_limits<TimeNs>::max() / 4;
    cpu_free_ns[rank] = cost_ns > kForever - start ? kForever : start + cost_ns;
    meter.add_cpu(rank, cpu_free_ns[rank] - start);
    // Work that ends later than now delays what waits for the CPU (the NIC
    // putting a request on the wire): the model checker must know.
    if (cpu_free_ns[rank] > now()) events.use(SharedObject::cpu(rank));
    if (tracing && cost_ns > 0) {
      trace.slice("rank " + std::to_string(rank) + "/cpu", what, start, cost_ns, "");
    }
    return cpu_free_ns[rank];
  }
  bool gpu_direct(uint32_t node, uint32_t gpu) const {
    if (cluster.gpu_direct.empty()) return true;
    return node < cluster.gpu_direct.size() && gpu < cluster.gpu_direct[node].size() &&
           cluster.gpu_direct[node][gpu];
  }
};

}  // namespace tensorwire::sim
