#include "runner/verbs_run.h"

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "launch/blob_all_gather.h"
#include "launch/coordinator_phase_gate.h"
#include "backend_verbs/cuda_memory.h"
#include "backend_verbs/device_ipv4_address.h"
#include "backend_verbs/verbs_nic_factory.h"
#include "backend_verbs/verbs_rank_env.h"
#include "core/assert.h"
#include "core/collective.h"
#include "core/rendezvous.h"
#include "core/trace_recording.h"
#include "core/workload/workload_driver.h"
#include "runner/last_work_drain.h"
#include "runner/rank_outcome.h"
#include "runner/verbs_collective_world.h"

namespace tensorwire {
namespace {

using WallClock = std::chrono::steady_clock;

std::string memory_field_value(MemoryKind kind, uint32_t device) {
  return is_device(kind) ? "gpu" + std::to_string(device) : memory_kind_name(kind);
}

TransportStats transport_stats(const verbs::VerbsRankEnv& env) {
  TransportStats s;
  const TransportCounters& t = env.transport();
  s.bytes_on_wire_tx = t.bytes_posted;
  s.sends = t.sends;
  s.rdma_writes = t.rdma_writes;
  s.rdma_writes_with_imm = t.rdma_writes_with_imm;
  s.rdma_reads = t.rdma_reads;
  s.registrations = t.registrations;
  s.registered_bytes = t.registered_bytes;
  s.deregistrations = t.deregistrations;
  s.completions_error = t.completions_error;
  return s;
}

// The Recvs of the current phase this rank still waits for, for the error.
std::string waiting_recvs(const WorkloadResult& result, RankId rank) {
  if (result.steps.empty()) return "none";
  std::string names;
  for (const TransferResult& t : result.steps.back().transfers) {
    if (t.dst != rank || t.done || t.recv_called_ns == 0) continue;
    names += (names.empty() ? "'" : ", '") + t.name + "' from rank " + std::to_string(t.src);
  }
  return names.empty() ? "none" : names;
}

std::string ms_text(std::chrono::milliseconds ms) {
  return std::to_string(ms.count()) + " ms";
}

// This rank's Recvs as slices, from the Recv call to its done callback.
void trace_recvs(const WorkloadResult& result, RankId rank, TraceSink& trace) {
  const std::string track = "rank " + std::to_string(rank) + "/recv";
  for (const StepResult& s : result.steps) {
    for (const TransferResult& t : s.transfers) {
      if (t.dst != rank || t.recv_called_ns == 0) continue;
      std::string detail = "step " + std::to_string(s.step_id) + ", rank " +
                           std::to_string(t.src) + " -> rank " + std::to_string(rank) + ", " +
                           std::to_string(t.bytes) + " bytes";
      if (!t.done) {
        trace.instant(track, t.name, t.recv_called_ns, detail + ", never done");
        continue;
      }
      if (!t.status.is_ok()) detail += ", failed: " + t.status.message();
      trace.slice(track, t.name, t.recv_called_ns, t.done_ns - t.recv_called_ns, detail);
    }
  }
}

// A stretch of the progress loop with a beginning and an end (an idle wait,
// a phase barrier), told to the trace as one slice when it ends.
class TracedStretch {
 public:
  TracedStretch(TraceSink& trace, const Clock& clock, std::string track, const char* name)
      : trace_(trace), clock_(clock), track_(std::move(track)), name_(name) {}
  void begin() {
    if (!began_) began_ = clock_.now_ns();
  }
  void end(std::string_view detail = {}) {
    if (!began_) return;
    trace_.slice(track_, name_, *began_, clock_.now_ns() - *began_, detail);
    began_.reset();
  }

 private:
  TraceSink& trace_;
  const Clock& clock_;
  std::string track_;
  const char* name_;
  std::optional<TimeNs> began_;
};

}  // namespace

namespace {

// A collective protocol places its buffers in the cluster's memories itself:
// with GPUs in the cluster it needs them as CUDA GPUs, or host memory
// standing in for them (--gpu-as-host).
Status check_collective_for_verbs(const Scenario& scenario, const std::string& where,
                                  bool gpu_as_host) {
  const uint32_t wanted = scenario.cluster.gpus_per_node;
  if (gpu_as_host || wanted == 0) return {};
  const Result<uint32_t> gpus = verbs::cuda::device_count();
  if (gpus && *gpus >= wanted) return {};
  const std::string why = gpus ? "this machine has " + std::to_string(*gpus) + " CUDA GPU(s)"
                               : gpus.status().message();
  return Status(StatusCode::kInvalidArgument,
                where + ": [cluster] gpus_per_node = " + std::to_string(wanted) + ": the " +
                    scenario.protocol.name + " places buffers in GPU memory, which this machine "
                    "cannot give: " + why + " (--gpu-as-host places them in host memory)");
}

}  // namespace

Status check_scenario_for_verbs(Scenario& scenario, uint32_t world, bool gpu_as_host) {
  const std::string where = scenario.source_path.empty() ? scenario.name : scenario.source_path;
  if (scenario.cluster.nodes != world) {
    return Status(StatusCode::kInvalidArgument,
                  where + ": [cluster] nodes = " + std::to_string(scenario.cluster.nodes) +
                      " but the run has " + std::to_string(world) +
                      " ranks (--world): one rank per node");
  }
  if (scenario.protocol.descriptor().shape() == ProtocolShape::kCollective) {
    return check_collective_for_verbs(scenario, where, gpu_as_host);
  }
  for (WorkloadStep& step : scenario.workload.steps) {
    for (WorkloadPhase& phase : step.phases) {
      for (TensorTransfer& t : phase.transfers) {
        struct Side {
          const char* field;
          MemoryKind* kind;
          uint32_t* device;
        };
        for (Side side : {Side{"src_memory", &t.src_kind, &t.src_device},
                          Side{"dst_memory", &t.dst_kind, &t.dst_device}}) {
          if (!is_device(*side.kind)) continue;
          if (gpu_as_host) {
            *side.kind = MemoryKind::kHostPinned;
            *side.device = 0;
            continue;
          }
          // GPU memory through CUDA, where this build has it and the GPU exists.
          const Result<uint32_t> gpus = verbs::cuda::device_count();
          if (gpus && *side.device < *gpus) continue;
          const std::string why = gpus ? "this machine has " + std::to_string(*gpus) + " CUDA GPU(s)"
                                       : gpus.status().message();
          return Status(StatusCode::kInvalidArgument,
                        where + ": tensor '" + t.name + "' (step " +
                            std::to_string(step.step_id) + "): " + side.field + " = \"" +
                            memory_field_value(*side.kind, *side.device) +
                            "\" is GPU memory, which this machine cannot give: " + why +
                            " (--gpu-as-host places GPU tensors in host memory)");
        }
      }
    }
  }
  return {};
}

namespace {

// The run's options against the coordinator made for it, then the scenario
// against the verbs backend (which may move GPU tensors to host memory).
Status check_rank_run(const launch::TcpCoordinator& coordinator, const VerbsRunOptions& options,
                      Scenario& scenario) {
  if (coordinator.rank() != options.rank || coordinator.world_size() != options.world) {
    return Status(StatusCode::kInvalidArgument,
                  "the coordinator was made for rank " + std::to_string(coordinator.rank()) +
                      " of " + std::to_string(coordinator.world_size()) + ", the run is rank " +
                      std::to_string(options.rank) + " of " + std::to_string(options.world));
  }
  if (options.phase_timeout.count() <= 0 || options.setup_timeout.count() <= 0 ||
      options.peer_timeout.count() <= 0) {
    return Status(StatusCode::kInvalidArgument, "timeouts must be positive");
  }
  return check_scenario_for_verbs(scenario, options.world, options.gpu_as_host);
}

// This rank's IPv4 address on the device: the one given, else the device's own.
Result<std::string> rank_address(const VerbsRunOptions& options) {
  if (!options.address.empty()) return options.address;
  return verbs::device_ipv4_address(options.device);
}

// The NIC on `address` of the device, with the scenario's send queue depth
// and as many receives per peer as the protocol keeps posted.
verbs::VerbsNicOptions nic_options_for(const Scenario& scenario, const VerbsRunOptions& options,
                                       const std::string& address) {
  verbs::VerbsNicOptions nic_options;
  nic_options.device_name = options.device;
  nic_options.address = address;
  nic_options.send_queue_depth = scenario.cluster.send_queue_depth;
  // The protocol keeps this many receives posted per peer.
  nic_options.recv_queue_depth = std::max<uint32_t>(
      scenario.protocol.descriptor().receives_per_peer(scenario.protocol.options), 16);
  nic_options.rnr_retry_count =
      static_cast<uint8_t>(std::min<uint32_t>(scenario.cluster.rnr_retry_count, 7));
  nic_options.connect_timeout = options.setup_timeout;
  nic_options.use_completion_channel = options.use_completion_channel;
  nic_options.qp_error_after_posts = options.qp_error_after_posts;
  return nic_options;
}

// What the report says about the run itself.
void describe_run(const Scenario& scenario, const VerbsRunOptions& options,
                  RunReport& report) {
  report.scenario_name = scenario.name;
  report.scenario_path = scenario.source_path;
  report.backend = "verbs";
  report.protocol = scenario.protocol.name;
  report.workload_kind = scenario.workload.kind;
  report.seed = options.has_seed ? options.seed : scenario.seed;
  report.payload = true;  // verbs always moves the bytes, and they are always checked
  report.ranks = options.world;
}

// Each step's payload bytes posted by this rank, into `step_wire_bytes` as
// the step ends: the NIC's counter then, less its value at the step before.
void count_step_wire_bytes(WorkloadDriver& driver, const verbs::VerbsRankEnv& env,
                           std::vector<uint64_t>& step_wire_bytes) {
  driver.set_progress_callback(
      [&env, &step_wire_bytes, wire_bytes_at_last_step_end = uint64_t{0}](size_t, size_t) mutable {
        const uint64_t now = env.transport().bytes_posted;
        step_wire_bytes.push_back(now - wire_bytes_at_last_step_end);
        wire_bytes_at_last_step_end = now;
      });
}

// The rank's progress loop while the workload runs: the NIC's completions
// and the phase gate's barrier, each phase's deadline for this rank's Recvs,
// and a short sleep (or a wait in the completion channel) when idle. Idle
// waits and phase barriers are traced on the rank's progress track.
class ProgressLoop {
 public:
  ProgressLoop(const VerbsRunOptions& options, WorkloadDriver& driver, verbs::VerbsRankEnv& env,
               launch::CoordinatorPhaseGate& gate, launch::TcpCoordinator& coordinator,
               TraceSink& rank_trace, const std::string& progress_track)
      : options_(options), driver_(driver), env_(env), gate_(gate), coordinator_(coordinator),
        idle_(rank_trace, env.clock(), progress_track,
              options.use_completion_channel ? "idle (completion channel)" : "idle (sleep)"),
        barrier_(rank_trace, env.clock(), progress_track, "phase barrier") {}

  // Until the workload finishes or stops. True when the rank died instead,
  // at its die_at_step (in-process: die() returns, and so does this).
  bool run() {
    while (!driver_.finished() && !driver_.stopped()) {
      if (options_.die_at_step && !driver_.result().steps.empty() &&
          driver_.result().steps.back().step_id == *options_.die_at_step) {
        if (options_.die) options_.die();
        return true;
      }
      if (!turn()) break;
    }
    // A barrier still pending is driven to its end (bounded by its deadline)
    // before the coordinator is used for anything else.
    while (gate_.waiting()) {
      if (!gate_.poll()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (options_.trace) {
      idle_.end();
      barrier_.end();
    }
    return false;
  }

  uint64_t events() const { return events_; }

 private:
  // One turn of the loop; false when the driver was stopped.
  bool turn() {
    Result<uint32_t> n = env_.poll();
    if (!n.is_ok()) {
      driver_.stop(Status(n.status().code(), "the NIC failed: " + n.status().message()));
      return false;
    }
    uint32_t handled = *n;
    if (!peers_still_there()) return false;
    if (options_.trace && gate_.waiting()) barrier_.begin();
    if (gate_.poll()) ++handled;
    events_ += handled;
    if (gate_.agreed_phases() != phases_agreed_) {
      phases_agreed_ = gate_.agreed_phases();
      phase_began_ = WallClock::now();
      barrier_.end();
    }
    // The phase's own deadline: this rank's Recvs must be done in time (the
    // barrier after them has its own).
    if (!gate_.waiting() && WallClock::now() - phase_began_ > options_.phase_timeout) {
      const uint64_t step_id =
          driver_.result().steps.empty() ? 0 : driver_.result().steps.back().step_id;
      driver_.stop(Status(StatusCode::kAborted,
                          "step " + std::to_string(step_id) + ": rank " +
                              std::to_string(options_.rank) + "'s Recvs did not finish within " +
                              ms_text(options_.phase_timeout) + " (waiting for " +
                              waiting_recvs(driver_.result(), options_.rank) + ")"));
      return false;
    }
    if (handled > 0) {
      idle_turns_ = 0;
      if (options_.trace) idle_.end();
    } else if (++idle_turns_ > options_.idle_spins_before_sleep) {
      return rest();
    }
    return true;
  }

  // Whether every peer is still there, looked at once a millisecond: a rank
  // waiting for a Recv from a lost peer would otherwise wait for its phase
  // timeout. A lost (or failed) peer stops the driver, naming it.
  bool peers_still_there() {
    const WallClock::time_point now = WallClock::now();
    if (now < next_peer_watch_) return true;
    next_peer_watch_ = now + std::chrono::milliseconds(1);
    Status st = coordinator_.watch_peers();
    if (st.is_ok()) return true;
    const uint64_t step_id =
        driver_.result().steps.empty() ? 0 : driver_.result().steps.back().step_id;
    driver_.stop(Status(st.code(), "step " + std::to_string(step_id) + ": " + st.message()));
    return false;
  }

  // Idle for long enough: sleep a little, in the completion channel when
  // asked. False when the NIC failed (and the driver was stopped).
  bool rest() {
    if (options_.trace) idle_.begin();
    bool slept = false;
    if (options_.use_completion_channel) {
      // While a phase barrier is pending, its sockets wake the rank too:
      // the phase's end is seen when it comes, not at the end of the wait.
      const std::vector<int> barrier_fds = coordinator_.barrier_fds();
      Result<uint32_t> woke = env_.wait_idle(std::chrono::milliseconds(1), &slept, barrier_fds);
      if (!woke.is_ok()) {
        driver_.stop(Status(woke.status().code(), "the NIC failed: " + woke.status().message()));
        return false;
      }
      events_ += *woke;
      if (*woke > 0) idle_turns_ = 0;
    }
    if (!slept) std::this_thread::sleep_for(std::chrono::microseconds(50));
    return true;
  }

  const VerbsRunOptions& options_;
  WorkloadDriver& driver_;
  verbs::VerbsRankEnv& env_;
  launch::CoordinatorPhaseGate& gate_;
  launch::TcpCoordinator& coordinator_;
  TracedStretch idle_;
  TracedStretch barrier_;
  uint64_t events_ = 0;
  uint32_t idle_turns_ = 0;
  uint64_t phases_agreed_ = 0;
  WallClock::time_point phase_began_ = WallClock::now();
  WallClock::time_point next_peer_watch_{};
};

// The end of the run (runner/last_work_drain.h): polling for at most
// `timeout`, then a barrier still pending driven to its end (within its own
// deadline). A rank that did not finish polls nothing. The events handled
// meanwhile.
uint64_t drain_rank(const WorkloadDriver& driver, const Rendezvous& rendezvous,
                    verbs::VerbsRankEnv& env, launch::CoordinatorPhaseGate& gate,
                    std::chrono::milliseconds timeout) {
  const WallClock::time_point until =
      WallClock::now() + (driver.finished() ? timeout : std::chrono::milliseconds(0));
  // One more barrier, after the workload's last phase: "this rank is drained".
  const uint64_t drain_step_id = driver.result().steps.size() + 1;
  return drain_last_work([&env] { return env.poll(); },
                         [&rendezvous] { return rendezvous.outstanding_work(); }, gate,
                         drain_step_id, until);
}

// What this rank knows of the run, for the others: its Recvs, counters and
// problems, and with tracing its events and clock.
RankOutcome this_rank_outcome(const VerbsRunOptions& options, const WorkloadDriver& driver,
                              const std::vector<uint64_t>& step_wire_bytes,
                              const Rendezvous& rendezvous, verbs::VerbsRankEnv& env,
                              TraceRecording& recording, const std::string& progress_track,
                              TimeNs left_setup_barrier_ns) {
  RankOutcome mine = rank_outcome_of(options.rank, driver.result(), step_wire_bytes);
  mine.stop_reason = driver.stopped() ? driver.stop_reason().to_string() : std::string();
  mine.protocol = rendezvous.counters();
  mine.transport = transport_stats(env);
  mine.transport.cpu_copies = env.memory().counters().cpu_copies;
  mine.transport.cpu_copy_bytes = env.memory().counters().cpu_copy_bytes;
  mine.transport.copy_engine_copies = env.copies().copies;
  mine.transport.copy_engine_bytes = env.copies().bytes;
  if (const size_t work = rendezvous.outstanding_work(); work != 0) {
    mine.problems.push_back(liveness_problem(
        std::to_string(work) + " protocol requests or responses still pending at the end",
        options.rank));
  }
  if (!options.trace) return mine;
  trace_recvs(driver.result(), options.rank, recording);
  mine.trace = recording.take_events();
  // Past the recording's bound (the marker itself would not be kept there).
  if (recording.dropped() > 0) {
    mine.trace.push_back(TraceEvent{progress_track, "trace truncated",
                                    std::to_string(recording.dropped()) +
                                        " later events were not kept",
                                    env.clock().now_ns(), 0, true});
  }
  mine.trace_clock.domain = verbs::MonotonicClock::domain();
  mine.trace_clock.origin_ns = env.clock().origin_on_monotonic_ns();
  mine.trace_clock.aligned_at_ns = left_setup_barrier_ns;
  return mine;
}

// Every rank's part, in rank order, through the coordinator. Empty when the
// gather failed or a part was malformed; `mine` then says why.
std::vector<RankOutcome> gather_rank_outcomes(launch::TcpCoordinator& coordinator,
                                              RankOutcome& mine, RankId rank) {
  std::vector<RankOutcome> parts;
  Result<std::vector<std::string>> gathered = launch::all_gather_blobs(coordinator,
                                                                      encode_rank_outcome(mine));
  if (!gathered.is_ok()) {
    mine.problems.push_back(transport_problem(
        "the ranks' results could not be gathered (only this rank's Recvs are reported): " +
            gathered.status().message(),
        rank));
    return parts;
  }
  for (RankId r = 0; r < gathered->size(); ++r) {
    if (r == rank) {
      parts.push_back(mine);
      continue;
    }
    Result<RankOutcome> part = decode_rank_outcome((*gathered)[r], r);
    if (!part.is_ok()) {
      parts.clear();
      mine.problems.push_back(bad_input_problem(part.status().message()));
      break;
    }
    parts.push_back(std::move(*part));
  }
  return parts;
}

// The merged parts into the report, and every problem they show.
void fill_report(MergedRun merged, TimeNs end_ns, uint64_t events, VerbsRunReport& out) {
  RunReport& report = out.report;
  report.workload = std::move(merged.workload);
  report.step_wire_bytes = std::move(merged.step_wire_bytes);
  report.rank_stats = std::move(merged.rank_stats);
  report.protocol_counters = std::move(merged.protocol_counters);
  for (const TransportStats& s : report.rank_stats) report.total_stats += s;
  report.end_ns = end_ns;
  report.wall_time = true;
  report.events_processed = events;
  out.measured_step_ns = std::move(merged.measured_step_ns);
  out.measured_transfer_ns = std::move(merged.measured_transfer_ns);
  report.problems = std::move(merged.problems);
  add_transfer_problems(report);
}

// This rank's transport and, traced, its events, for the others: a
// collective's own parts travel in its all-gather, these in the runner's.
RankOutcome collective_rank_outcome(const VerbsRunOptions& options, verbs::VerbsRankEnv& env,
                                    TraceRecording& recording, TimeNs left_setup_barrier_ns) {
  RankOutcome mine;
  mine.rank = options.rank;
  mine.finished = true;
  mine.transport = transport_stats(env);
  mine.transport.cpu_copies = env.memory().counters().cpu_copies;
  mine.transport.cpu_copy_bytes = env.memory().counters().cpu_copy_bytes;
  mine.transport.copy_engine_copies = env.copies().copies;
  mine.transport.copy_engine_bytes = env.copies().bytes;
  if (!options.trace) return mine;
  mine.trace = recording.take_events();
  mine.trace_clock.domain = verbs::MonotonicClock::domain();
  mine.trace_clock.origin_ns = env.clock().origin_on_monotonic_ns();
  mine.trace_clock.aligned_at_ns = left_setup_barrier_ns;
  return mine;
}

// The collective's outcome and every rank's transport into the report.
void fill_collective_report(CollectiveOutcome outcome, const VerbsCollectiveWorld& world,
                            std::vector<RankOutcome> parts, VerbsRunReport& out) {
  RunReport& report = out.report;
  report.end_ns = world.end_ns();
  report.wall_time = true;
  report.events_processed = world.events();
  report.protocol_counters = std::move(outcome.counters);
  report.coverage = std::move(outcome.coverage);
  report.collective = std::move(outcome.account);
  report.problems = world.problems();
  for (Problem& p : outcome.problems) report.problems.push_back(std::move(p));
  for (RankOutcome& part : parts) {
    report.rank_stats.push_back(part.transport);
    report.total_stats += part.transport;
    for (Problem& p : part.problems) report.problems.push_back(std::move(p));
  }
}

// A collective protocol's operation: this rank's part of it, in a world of
// one process per rank (runner/verbs_collective_world.h); the protocol
// gathers and merges the ranks' parts itself, the runner their transports.
Result<VerbsRunReport> run_collective_rank(const Scenario& scenario, const VerbsRunOptions& options,
                                           launch::TcpCoordinator& coordinator,
                                           verbs::VerbsRankEnv& env, TraceRecording& recording,
                                           VerbsRunReport out, TraceSink& trace) {
  const CollectiveProtocol* protocol = scenario.protocol.descriptor().collective();
  TW_ASSERT_MSG(protocol != nullptr, "a protocol of collective shape runs collectives");
  TW_ASSERT_MSG(scenario.collective_workload.has_value(), "the loader read its workload");
  // Every rank is connected and set up before any part starts.
  if (Status st = coordinator.barrier(options.setup_timeout); !st.is_ok()) return st;
  const TimeNs left_setup_barrier_ns = env.clock().now_ns();
  VerbsCollectiveWorld world(env, coordinator,
                             {options.rank, options.world, options.gpu_as_host,
                              options.phase_timeout, options.idle_spins_before_sleep});
  // Verbs always moves the bytes, and every destination's are checked.
  const CollectiveRequest request{scenario.cluster, scenario.collective_workload,
                                  scenario.protocol.options, out.report.seed, true, {}};
  CollectiveOutcome outcome = protocol->run(world, request);
  RankOutcome mine = collective_rank_outcome(options, env, recording, left_setup_barrier_ns);
  std::vector<RankOutcome> parts = gather_rank_outcomes(coordinator, mine, options.rank);
  out.whole_run = !parts.empty();
  if (parts.empty()) parts.push_back(mine);
  if (options.trace) out.trace_clocks = merge_rank_traces(parts, trace);
  fill_collective_report(std::move(outcome), world, std::move(parts), out);
  return out;
}

}  // namespace

Result<VerbsRunReport> run_verbs_rank(const Scenario& scenario, const VerbsRunOptions& options,
                                      TraceSink& trace) {
  launch::CoordinatorOptions co;
  co.address = options.coordinator;
  co.rank = options.rank;
  co.world_size = options.world;
  co.timeout = options.setup_timeout;
  co.peer_timeout = options.peer_timeout;
  Result<std::unique_ptr<launch::TcpCoordinator>> coordinator = launch::TcpCoordinator::create(co);
  if (!coordinator.is_ok()) return coordinator.status();
  return run_verbs_rank(scenario, options, **coordinator, trace);
}

Result<VerbsRunReport> run_verbs_rank(const Scenario& scenario_in, const VerbsRunOptions& options,
                                      launch::TcpCoordinator& coordinator, TraceSink& trace) {
  // Whatever stops this rank before the workload tells the others at once.
  const auto give_up = [&coordinator](Status st) {
    coordinator.abort(st);
    return st;
  };
  Scenario scenario = scenario_in;
  if (Status st = check_rank_run(coordinator, options, scenario); !st.is_ok()) return give_up(st);
  VerbsRunReport out;
  out.rank = options.rank;
  out.world = options.world;
  out.device = options.device;
  Result<std::string> address = rank_address(options);
  if (!address.is_ok()) return give_up(address.status());
  out.address = *address;
  Result<std::unique_ptr<verbs::VerbsNic>> nic =
      verbs::connect_verbs_nic(nic_options_for(scenario, options, out.address), coordinator);
  if (!nic.is_ok()) return nic.status();  // connect_verbs_nic has aborted the coordinator
  describe_run(scenario, options, out.report);

  // The rank's own events, on its own clock; they join the others' at the end.
  // At most 200,000 of them (about 20 MB to gather).
  TraceRecording recording(200'000);
  NullTraceSink no_trace;
  TraceSink& rank_trace = options.trace ? static_cast<TraceSink&>(recording) : no_trace;
  verbs::VerbsRankEnv env(**nic, rank_trace, options.trace);
  if (scenario.protocol.descriptor().shape() == ProtocolShape::kCollective) {
    return run_collective_rank(scenario, options, coordinator, env, recording, std::move(out), trace);
  }
  const std::unique_ptr<Rendezvous> protocol =
      scenario.protocol.descriptor().make_rendezvous(env.env(), scenario.protocol.options);
  Rendezvous& rendezvous = *protocol;
  if (Status st = rendezvous.start(); !st.is_ok()) {
    return give_up(Status(st.code(), "rank " + std::to_string(options.rank) +
                                         ": the protocol could not start: " + st.message()));
  }
  // Every rank's receive rings are posted before anyone sends.
  if (Status st = coordinator.barrier(options.setup_timeout); !st.is_ok()) return st;
  // Every rank leaves that barrier at (nearly) the same moment: where ranks
  // on different hosts align their traces.
  const TimeNs left_setup_barrier_ns = env.clock().now_ns();

  launch::CoordinatorPhaseGate gate(coordinator, options.phase_timeout);
  WorkloadDriver driver(scenario.workload, out.report.seed, options.rank, options.world,
                        env.env(), &rendezvous, gate);
  std::vector<uint64_t> step_wire_bytes;
  count_step_wire_bytes(driver, env, step_wire_bytes);
  const std::string progress_track = "rank " + std::to_string(options.rank) + "/progress";
  ProgressLoop loop(options, driver, env, gate, coordinator, rank_trace, progress_track);
  driver.start();
  out.died = loop.run();
  // In-process, a rank that died leaves without a word; the NIC and
  // coordinator close as the stack unwinds, as a killed process's would.
  if (out.died) return out;
  // A rank that stopped on its own (not at a failed barrier, which broke the
  // coordinator already) tells the others at once.
  if (driver.stopped()) coordinator.abort(driver.stop_reason());
  const uint64_t events =
      loop.events() + drain_rank(driver, rendezvous, env, gate, options.phase_timeout);

  RankOutcome mine = this_rank_outcome(options, driver, step_wire_bytes, rendezvous, env,
                                       recording, progress_track, left_setup_barrier_ns);
  std::vector<RankOutcome> parts = gather_rank_outcomes(coordinator, mine, options.rank);
  out.whole_run = !parts.empty();
  if (parts.empty()) parts.push_back(mine);
  if (options.trace) out.trace_clocks = merge_rank_traces(parts, trace);
  MergedRun merged = merge_rank_outcomes(parts, out.whole_run);
  fill_report(std::move(merged), env.clock().now_ns(), events, out);
  driver.release_memory();
  return out;
}

}  // namespace tensorwire
