// The deterministic discrete-event simulator: one thread, simulated integer
// nanoseconds, every event ordered by (time, sequence number) with ties among
// same-time events broken by a replaceable Scheduler. It implements the
// abstract NIC, clock, copy engine and memory for every rank.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "backend_sim/sim_config.h"
#include "core/problem.h"
#include "core/resource_usage.h"
#include "core/transport_stats.h"
#include "core/rank_env.h"
#include "core/trace_sink.h"
#include "core/transfer_breakdown.h"

namespace tensorwire::sim {

class Scheduler;      // backend_sim/scheduler.h
class SimObserver;    // backend_sim/sim_observer.h

class Simulator {
 public:
  Simulator(Cluster cluster, SimOptions options, TraceSink& trace);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  uint32_t world_size() const;
  // The environment of rank r (valid for the simulator's lifetime).
  RankEnv env(RankId r);

  TimeNs now_ns() const;
  // Process one event. False when none is pending.
  bool step();
  // Run until no event is pending.
  void run();
  // Run events with time <= t, then set now to t.
  void run_until(TimeNs t);
  bool idle() const;
  uint64_t events_processed() const;

  // Per-rank and whole-cluster counters.
  const TransportStats& stats(RankId r) const;
  TransportStats total_stats() const;
  // How busy every port side, copy engine and CPU has been so far
  // (core/resource_usage.h), node by node.
  std::vector<ResourceUsage> resource_usage() const;

  // Faults (simulator-only API).
  void crash_rank(RankId r);                  // peers' QPs to it go to error
  void break_queue_pair(RankId a, RankId b);  // both ends to error, work flushed
  void fail_next_registration(RankId r);      // rank r's next register_memory fails
  // The earliest pending timeout (a timer set to fire later than now: see
  // SimClock) fires now instead; the rank it belongs to, or nullopt when none
  // is pending.
  std::optional<RankId> fire_timeout_now();
  bool timeout_pending() const;

  // Where transfer `tag` (from src to dst) spent [from_ns, to_ns), from what
  // was posted for it so far and what no transfer owned between its ranks
  // (core/transfer_breakdown.h, transfer_ledger.h).
  TransferBreakdown transfer_breakdown(uint64_t tag, RankId src, RankId dst, TimeNs from_ns,
                                       TimeNs to_ns) const;

  // What the DMA sanitizer found (backend_sim/dma_sanitizer.h): safety
  // problems in the order found, each naming rank, range and both operations.
  const std::vector<Problem>& dma_problems() const;

  // A hash of the simulated hardware's state (queue pairs, memory, CPU
  // timelines, what is pending and when), the same whatever order of events
  // led to it: for model checkers' state caches.
  uint64_t state_digest() const;

  void set_scheduler(std::unique_ptr<Scheduler> scheduler);
  // The run's report is taken; only its teardown is left (EventQueue::stop_reporting_uses).
  void report_taken();
  void set_observer(SimObserver* observer);  // not owned; nullptr to clear

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorwire::sim
