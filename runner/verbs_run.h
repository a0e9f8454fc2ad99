// Runs ONE rank of a scenario on a real RDMA device, in this process: joins
// the coordinator, connects the VerbsNic to every peer, builds the rank's
// RdmaRendezvous on a VerbsRankEnv, and plays this rank's Sends and Recvs of
// the workload (WorkloadDriver's one-rank mode), each phase ending with a
// coordinator barrier that every rank must reach before its deadline. Payload
// is always moved and every delivered tensor is checked byte for byte, as on
// the simulator (the receiver recomputes the content from seed, step and
// name). At the end the ranks all-gather their parts and each one merges
// them, so every rank returns the same whole-run RunReport.
//
// Scenario fields only the simulator can use (bandwidths, latencies, costs)
// are ignored; fields verbs cannot honour are refused before anything
// connects (check_scenario_for_verbs).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launch/tcp_coordinator.h"
#include "core/trace_sink.h"
#include "runner/simulation_run.h"
#include "scenario/scenario.h"

namespace tensorwire {

struct VerbsRunOptions {
  RankId rank = 0;
  uint32_t world = 1;
  std::string coordinator;  // "HOST:PORT": rank 0 listens there, the others connect
  std::string device;       // "rxe0"
  std::string address;      // this rank's IPv4 on the device; empty: from its GID table
  uint64_t seed = 0;
  bool has_seed = false;
  // Run GPU tensors in host memory (there is no CUDA support yet); without it
  // a scenario with GPU memory is refused.
  bool gpu_as_host = false;
  std::chrono::milliseconds setup_timeout{60'000};  // join, connect, each set-up barrier
  // Bound on each phase: this rank's Recvs, then the barrier that ends it.
  std::chrono::milliseconds phase_timeout{60'000};
  // How soon this rank notices a lost peer and stops: a peer whose process
  // ended is seen at once (its coordinator connection closes; the progress
  // loop looks every millisecond, whatever the rank is waiting for), one whose
  // host went silent within about this long (TCP keepalive on the
  // coordinator's connections). Either way the rank fails with "rank N lost:
  // ..." and tells the others. `tensorwire launch` stops a rank still running
  // this long after another failed.
  std::chrono::milliseconds peer_timeout{5'000};
  // Busy-poll this many idle turns of the progress loop before sleeping a
  // little between turns (ranks sharing few cores must leave some to others).
  uint32_t idle_spins_before_sleep = 256;
  // Sleep in the completion channel when idle (woken by the next completion)
  // instead of sleeping a fixed 50 us per turn; at most 1 ms at a time, so
  // the end of a phase's barrier is seen within 1 ms.
  bool use_completion_channel = false;
  // Trace the run: every rank records its NIC's work requests and
  // registrations (verbs/tracing_nic.h), its idle waits and phase barriers
  // ("rank R/progress") and its Recvs ("rank R/recv"); the records travel
  // with the results' all-gather and every rank tells the `trace` sink of
  // run_verbs_rank the whole run's. Every rank must be given the same value.
  bool trace = false;
  // Fault injection for tests: when this rank has started the step with this
  // step_id, it dies there. `die` is how: the CLI raises SIGKILL; in-process
  // tests return at once and drop the rank's NIC and coordinator unannounced.
  // (In-process, a rank dies cleanly only while it still waits for a Recv of
  // the step: a rank already waiting at the phase's barrier holds its
  // coordinator until that barrier ends. The CLI's SIGKILL has no such limit.)
  std::optional<uint64_t> die_at_step;
  std::function<void()> die;
  // Fault injection for tests: when nonzero, the queue pair of this rank's
  // Nth send-side work request goes to the error state right after it is
  // posted (verbs::VerbsNicOptions::qp_error_after_posts), as the simulator's
  // qp_error fault: both ends fail, the Recvs on it fail with errors.
  uint64_t qp_error_after_posts = 0;
};

struct VerbsRunReport {
  RunReport report;  // backend "verbs"; same schema as the simulator's
  // Wall times (the backend's clock is the monotonic clock, so they are the
  // steps' and Recvs' own durations), indexed like report.workload.steps.
  std::vector<std::optional<int64_t>> measured_step_ns;
  std::vector<std::vector<std::optional<int64_t>>> measured_transfer_ns;
  // True when every rank's part was gathered; false: only this rank's Recvs
  // are in the report (the gather could not run, e.g. a rank died).
  bool whole_run = false;
  bool died = false;  // die_at_step struck this rank (tests)
  std::string trace_clocks;  // traced runs: how the ranks' clocks were put on one line
  RankId rank = 0;
  uint32_t world = 0;
  std::string device;
  std::string address;
};

// Checks that the verbs backend can run `scenario` as `world` ranks: a
// tensors or parameter-server workload, [cluster] nodes equal to the world,
// host memory for every tensor. With gpu_as_host, GPU tensors are moved to
// host memory here instead. kInvalidArgument naming the tensor and the field.
Status check_scenario_for_verbs(Scenario& scenario, uint32_t world, bool gpu_as_host);

// With options.trace, `trace` is told every rank's events (only this rank's
// when the gather failed), on one time line (merge_rank_traces in
// rank_outcome.h: exact for ranks of one host; across hosts, aligned where
// the ranks left the set-up barrier). Without it, `trace` is told nothing.
//
// Errors are for what stops the rank before its workload starts (a scenario
// verbs cannot run, a device that does not open, a peer that never comes);
// what goes wrong afterwards is in the report's problems.
Result<VerbsRunReport> run_verbs_rank(const Scenario& scenario, const VerbsRunOptions& options,
                                      TraceSink& trace);
// The same with a coordinator made by the caller for this rank (tests run the
// ranks as threads, with rank 0's coordinator on a port the kernel picked).
Result<VerbsRunReport> run_verbs_rank(const Scenario& scenario, const VerbsRunOptions& options,
                                      launch::TcpCoordinator& coordinator, TraceSink& trace);

}  // namespace tensorwire
