// What one rank of a verbs run knows when its part is over, and how the parts
// of every rank become one RunReport with the simulator's schema.
//
// In a run with one process per rank, rank r has played only its own Sends
// and Recvs: it knows the Recvs whose dst is r, its protocol counters and its
// NIC's. Each rank encodes its part (RankOutcome, as JSON text), the parts
// travel through the coordinator's all-gather, and every rank merges them, so
// every rank reaches the same verdict. A part comes from another process and
// is validated like any input from a peer: a malformed one is an error naming
// the rank, never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/transport_stats.h"
#include "core/problem.h"
#include "core/protocol_counters.h"
#include "core/trace_recording.h"
#include "core/workload/workload_driver.h"
#include "runner/simulation_run.h"

namespace tensorwire {

struct RankStepOutcome {
  uint64_t step_id = 0;
  TimeNs start_ns = 0;  // on this rank's clock
  TimeNs end_ns = 0;
  bool finished = false;
  uint64_t wire_bytes = 0;  // payload bytes this rank posted during the step
  // (index in the step's transfers, the Recv's result) for this rank's Recvs.
  std::vector<std::pair<size_t, TransferResult>> recvs;
};

// A rank's clock, as merge_rank_traces needs it.
struct TraceClock {
  std::string domain;         // ranks with the same non-empty one share CLOCK_MONOTONIC
  int64_t origin_ns = 0;      // the rank's 0 on CLOCK_MONOTONIC
  int64_t aligned_at_ns = 0;  // on the rank's clock: when it left the set-up barrier
};

struct RankOutcome {
  RankId rank = 0;
  bool finished = false;  // every step of the workload ran to its end here
  std::string stop_reason;  // why not, when not
  uint64_t recvs_completed_twice = 0;
  std::vector<RankStepOutcome> steps;
  ProtocolCounters protocol;
  TransportStats transport;
  std::vector<Problem> problems;  // this rank's own (left pending, NIC errors, ...)
  // This rank's trace events when the run is traced (empty otherwise), on
  // this rank's own clock, and what puts them on the run's one time line.
  std::vector<TraceEvent> trace;
  TraceClock trace_clock;
};

// This rank's part of a driver's result (the driver played `rank` only).
// `step_end_wire_bytes[i]` is the NIC's posted-bytes counter when step i ended.
RankOutcome rank_outcome_of(RankId rank, const WorkloadResult& result,
                            const std::vector<uint64_t>& step_wire_bytes);

std::string encode_rank_outcome(const RankOutcome& outcome);
// `expected_rank`: the rank the all-gather says sent it.
Result<RankOutcome> decode_rank_outcome(std::string_view text, RankId expected_rank);

struct MergedRun {
  WorkloadResult workload;
  std::vector<uint64_t> step_wire_bytes;  // finished steps, every rank's bytes added up
  std::vector<std::optional<int64_t>> measured_step_ns;
  std::vector<std::vector<std::optional<int64_t>>> measured_transfer_ns;
  std::vector<TransportStats> rank_stats;
  std::vector<ProtocolCounters> protocol_counters;
  std::vector<Problem> problems;
};

// Merges parts in rank order. With `complete`, parts holds every rank of the
// world and each transfer must be reported by exactly one (its dst); without,
// only the transfers the parts report appear. Steps and their times are the
// first part's (rank 0's when complete: after each phase's barrier its clock
// has seen the whole step).
MergedRun merge_rank_outcomes(const std::vector<RankOutcome>& parts, bool complete);

// Tells `sink` every part's trace events on one time line whose 0 is the
// earliest event. When every part is in the same clock domain (one host) the
// ranks' clocks are put on CLOCK_MONOTONIC, exactly; otherwise each rank's
// moment of leaving the set-up barrier is taken as the same instant (off by
// the barrier's own skew). Returns which of the two it did, in words.
std::string merge_rank_traces(const std::vector<RankOutcome>& parts, TraceSink& sink);

}  // namespace tensorwire
