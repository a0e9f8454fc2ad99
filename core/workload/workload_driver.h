// Plays a Workload against one Rendezvous per rank: at each phase it
// calls Send and Recv at their offsets, checks every delivered tensor against
// what was sent (payload mode), and starts the next phase when every Recv of
// this one has finished. It only schedules; the backend's progress loop runs it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/rendezvous.h"
#include "core/rank_env.h"
#include "core/transfer_breakdown.h"
#include "core/workload/phase_gate.h"
#include "core/workload/workload.h"

namespace tensorwire {

struct TransferResult {
  uint64_t step_id = 0;
  std::string phase;
  std::string name;
  RankId src = 0;
  RankId dst = 0;
  uint64_t bytes = 0;         // content bytes (proto bytes for strings, 0 when dead)
  TimeNs recv_called_ns = 0;  // when the application called Recv
  TimeNs done_ns = 0;         // when Recv's done callback ran
  bool done = false;          // Recv's done callback ran (or the driver failed the transfer)
  Status status;              // what Recv reported
  bool verified = false;      // content checked equal to what was sent (payload mode)
  std::string mismatch;       // why verification failed, empty when it did not
  // Where the Recv's wait went, for a done transfer on a backend that
  // attributes work to transfers (the simulator's runner fills it).
  std::optional<TransferBreakdown> breakdown;
};

struct StepResult {
  uint64_t step_id = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  std::vector<TransferResult> transfers;
};

struct WorkloadResult {
  std::vector<StepResult> steps;
  bool finished = false;        // every step ran to its end
  uint64_t recvs_failed = 0;    // Recv done with an error status
  uint64_t content_mismatches = 0;
  uint64_t recvs_completed_twice = 0;  // a done callback ran more than once (a protocol bug)
};

class WorkloadDriver {
 public:
  // `envs[r]` and `rendezvous[r]` for every rank r; neither is owned, nor is
  // `workload`, which must outlive the driver: it is read, never copied (a
  // 1024-node parameter server's workload is tens of megabytes, and a model
  // checker builds a driver for every execution).
  WorkloadDriver(const Workload& workload, uint64_t seed, std::vector<RankEnv> envs,
                 std::vector<Rendezvous*> rendezvous);
  WorkloadDriver(Workload&& workload, uint64_t seed, std::vector<RankEnv> envs,
                 std::vector<Rendezvous*> rendezvous) = delete;  // it would dangle
  // Plays only rank `local`'s part of a `world`-rank workload (one process per
  // rank): its Sends and its Recvs, each checked as above. Every transfer of
  // a phase still gets a TransferResult (same indices on every rank), but only
  // those whose dst is `local` are ever done here. A phase ends when `gate`
  // agrees that every rank's Recvs are done; until then the phase's Sends may
  // still run. None of env, rendezvous or gate is owned.
  WorkloadDriver(const Workload& workload, uint64_t seed, RankId local, uint32_t world,
                 RankEnv env, Rendezvous* rendezvous, PhaseGate& gate);
  WorkloadDriver(Workload&& workload, uint64_t seed, RankId local, uint32_t world, RankEnv env,
                 Rendezvous* rendezvous, PhaseGate& gate) = delete;  // it would dangle
  ~WorkloadDriver();
  WorkloadDriver(const WorkloadDriver&) = delete;
  WorkloadDriver& operator=(const WorkloadDriver&) = delete;

  // Schedule the first phase. The caller then runs the backend until idle.
  void start();
  // Called by the driver after every phase, with (steps finished, steps total).
  void set_progress_callback(std::function<void(size_t, size_t)> on_progress);

  bool finished() const;
  // Ends the run here: every Recv of the current phase still waiting fails
  // with `why`, no further phase starts, later done callbacks are ignored.
  // (A gate's error stops the run the same way.)
  void stop(Status why);
  bool stopped() const;
  // The application aborts the step it is in on `rank` (TensorFlow's
  // StepAbort, injected by the model checker): that rank's Rendezvous fails
  // the step's pending Sends and Recvs with `why` and answers peers' requests
  // for it with an error. The step's later phases run as written. False (and
  // The step aborted; nullopt (and nothing done) when the run has ended or
  // that rank already aborted this step.
  std::optional<uint64_t> abort_step(RankId rank, Status why);
  bool can_abort_step(RankId rank) const;
  // Why the run stopped (ok while it has not).
  const Status& stop_reason() const;
  // Frees the source tensors the driver allocated. Call once the backend is idle.
  void release_memory();
  const WorkloadResult& result() const;
  // The result, moved out, once the backend is idle and nothing will drive
  // the workload again: a parameter server's results hold a record per
  // transfer (80,000 at 256 nodes), too many to copy at the end of a run.
  WorkloadResult take_result();
  // A hash of where the workload stands (step, phase, which Recvs are done
  // and how, the sources it holds): for model checkers' state caches.
  uint64_t state_digest() const;

 private:
  struct SourceKey;
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorwire
