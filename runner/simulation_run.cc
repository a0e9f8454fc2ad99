#include "runner/simulation_run.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend_sim/simulator.h"
#include "core/assert.h"
#include "core/workload/peer_sets.h"
#include "runner/model_hooks.h"

namespace tensorwire {
namespace {

// The simulator's options for a run: the seed and mode settled in the report
// header, the scenario's payload limits where it sets them, and the model
// checker's memory options.
sim::SimOptions sim_options_of(const Scenario& scenario, const RunReport& report,
                               const SimulationOptions& options) {
  sim::SimOptions sim_options;
  sim_options.plant_overlapping_allocations = options.plant_overlapping_allocations;
  sim_options.adversarial_memory = options.adversarial_memory;
  sim_options.state_digests = options.state_digests;
  sim_options.transfer_ledger = options.measurements;
  sim_options.seed = report.seed;
  sim_options.payload = report.payload;
  if (scenario.payload_limit_bytes_per_rank > 0) {
    sim_options.payload_limit_bytes_per_rank = scenario.payload_limit_bytes_per_rank;
  }
  if (scenario.payload_limit_bytes_total > 0) {
    sim_options.payload_limit_bytes_total = scenario.payload_limit_bytes_total;
  }
  return sim_options;
}

// The DMA sanitizer's findings, in the order it found them (simulated time),
// ahead of the run's own checks: they name a cause (a buffer freed under a
// DMA, a race) where the checks see its consequences (wrong bytes, a hang).
// Safety problems, whatever became of the requests they belong to (an
// injected fault excuses none of them).
void add_dma_problems(RunReport& report, const sim::Simulator& simulator) {
  const std::vector<Problem>& found = simulator.dma_problems();
  report.problems.insert(report.problems.begin(), found.begin(), found.end());
}

// Where every done transfer's Recv wait went (core/transfer_breakdown.h), from
// what the simulator attributed to it.
void add_transfer_breakdowns(WorkloadResult& workload, const sim::Simulator& simulator) {
  for (size_t s = 0; s < workload.steps.size(); ++s) {
    std::vector<TransferResult>& transfers = workload.steps[s].transfers;
    for (size_t i = 0; i < transfers.size(); ++i) {
      TransferResult& t = transfers[i];
      if (!t.done) continue;
      t.breakdown = simulator.transfer_breakdown(transfer_tag(s, i), t.src, t.dst,
                                                 t.recv_called_ns, t.done_ns);
    }
  }
}

// Every check a point-to-point run must pass once the simulator is idle; each
// failure is one typed problem naming what and where.
void check_point_to_point_run(RunReport& report,
                              const std::vector<std::unique_ptr<Rendezvous>>& rendezvous) {
  const WorkloadResult& w = report.workload;
  if (!w.finished) {
    report.problems.push_back(liveness_problem(
        "the simulator went idle with the workload unfinished (step " +
        std::to_string(w.steps.empty() ? 0 : w.steps.back().step_id) + ")"));
  }
  add_transfer_problems(report);
  for (RankId r = 0; r < report.ranks; ++r) {
    if (const size_t work = rendezvous[r]->outstanding_work(); work != 0) {
      report.problems.push_back(liveness_problem(
          "rank " + std::to_string(r) + ": " + std::to_string(work) +
              " protocol requests or responses still pending at the end",
          r));
    }
  }
}

// Each rank's peers (core/workload/peer_sets.h), for protocols that set up
// state only for the pairs that talk; nullopt, with the problem in the report,
// for a workload that names a rank outside the cluster.
std::optional<std::vector<std::vector<RankId>>> workload_peers(const Scenario& scenario,
                                                               RunReport& report) {
  Result<std::vector<std::vector<RankId>>> peers = peer_sets_of(scenario.workload, report.ranks);
  if (peers.is_ok()) return std::move(*peers);
  report.problems.push_back(
      status_problem("workload: " + peers.status().to_string(), peers.status(), 0));
  return std::nullopt;
}

RunReport run_point_to_point(const Scenario& scenario, const SimulationOptions& options,
                             TraceSink& trace, const ProgressCallback& on_progress) {
  RunReport report = run_report_header(scenario, options);
  sim::Simulator simulator(scenario.cluster, sim_options_of(scenario, report, options), trace);
  report.ranks = simulator.world_size();
  if (scenario.cluster.jitter.enabled()) report.jitter = scenario.cluster.jitter.describe();
  attach_model_hooks(simulator, options);

  const ProtocolDescriptor& protocol = scenario.protocol.descriptor();
  report.coverage = protocol.coverage(scenario.protocol.options);
  // Outlives every rendezvous that holds a pointer into it.
  const std::optional<std::vector<std::vector<RankId>>> peers = workload_peers(scenario, report);
  if (!peers) return report;
  std::vector<std::unique_ptr<Rendezvous>> rendezvous;
  std::vector<Rendezvous*> rendezvous_ptrs;
  std::vector<RankEnv> envs;
  for (RankId r = 0; r < report.ranks; ++r) {
    envs.push_back(simulator.env(r));
    envs.back().peers = &(*peers)[r];
    // No breakdowns: no transfer to attribute work to (the ledger is off too).
    if (!options.measurements) envs.back().attribution = nullptr;
    rendezvous.push_back(protocol.make_rendezvous(envs.back(), scenario.protocol.options));
    TW_ASSERT(rendezvous.back() != nullptr);
    rendezvous_ptrs.push_back(rendezvous.back().get());
    if (Status st = rendezvous.back()->start(); !st.is_ok()) {
      report.problems.push_back(
          status_problem("rank " + std::to_string(r) + ": start failed: " + st.to_string(), st, r));
      return report;
    }
  }

  if (options.on_started) options.on_started(rendezvous_ptrs);
  WorkloadDriver driver(scenario.workload, report.seed, envs, rendezvous_ptrs);
  if (options.on_workload_started) options.on_workload_started(simulator, driver);
  uint64_t wire_bytes_at_last_step_end = 0;
  // The steps' window of resource usage: from here to the last step's end.
  const std::vector<ResourceUsage> usage_at_start =
      options.measurements ? simulator.resource_usage() : std::vector<ResourceUsage>{};
  std::vector<ResourceUsage> usage_at_last_step_end = usage_at_start;
  driver.set_progress_callback([&](size_t steps_done, size_t steps_total) {
    const uint64_t wire_bytes = simulator.total_stats().bytes_on_wire_tx;
    report.step_wire_bytes.push_back(wire_bytes - wire_bytes_at_last_step_end);
    wire_bytes_at_last_step_end = wire_bytes;
    if (options.measurements) usage_at_last_step_end = simulator.resource_usage();
    if (on_progress) on_progress(steps_done, steps_total);
  });
  driver.start();
  run_until_idle(simulator);
  driver.release_memory();

  report.end_ns = simulator.now_ns();
  report.events_processed = simulator.events_processed();
  report.workload = driver.take_result();  // nothing drives the workload after run_until_idle
  if (options.measurements) add_transfer_breakdowns(report.workload, simulator);
  for (RankId r = 0; r < report.ranks; ++r) {
    report.rank_stats.push_back(simulator.stats(r));
    if (options.measurements) report.protocol_counters.push_back(rendezvous[r]->counters());
    add_transition_tables(report.transitions, rendezvous[r]->transition_tables());
    rendezvous[r]->add_coverage(report.coverage);
  }
  if (options.transition_coverage) add_transition_coverage(report.coverage, report.transitions);
  report.total_stats = simulator.total_stats();
  if (options.measurements) {
    report.resources = simulator.resource_usage();
    report.step_resources = usage_between(usage_at_start, usage_at_last_step_end);
  }
  check_point_to_point_run(report, rendezvous);
  add_dma_problems(report, simulator);
  simulator.report_taken();  // the teardown after this is no event (docs/ARCHITECTURE.md)
  return report;
}

// The simulator as the world a collective protocol runs in; it records the
// run's end into `report` when the protocol says the operation is over.
class SimulatedWorld final : public CollectiveWorld {
 public:
  SimulatedWorld(sim::Simulator& simulator, RunReport& report)
      : simulator_(simulator), report_(report) {}

  uint32_t world_size() const override { return simulator_.world_size(); }
  RankEnv env(RankId rank) override { return simulator_.env(rank); }
  void run_until_idle() override { tensorwire::run_until_idle(simulator_); }
  void record_end() override {
    TW_ASSERT_MSG(report_.rank_stats.empty(), "a run ends once");
    report_.end_ns = simulator_.now_ns();
    report_.events_processed = simulator_.events_processed();
    report_.total_stats = simulator_.total_stats();
    for (RankId r = 0; r < simulator_.world_size(); ++r) {
      report_.rank_stats.push_back(simulator_.stats(r));
    }
    report_.resources = simulator_.resource_usage();
  }

 private:
  sim::Simulator& simulator_;
  RunReport& report_;
};

// A collective protocol runs its operation on the simulated cluster; the
// report adds the simulator's side (time, events, transport stats).
RunReport run_collective(const Scenario& scenario, const SimulationOptions& options,
                         TraceSink& trace, const ProgressCallback& on_progress) {
  RunReport report = run_report_header(scenario, options);
  const CollectiveProtocol* protocol = scenario.protocol.descriptor().collective();
  TW_ASSERT_MSG(protocol != nullptr, "a protocol of collective shape runs collectives");
  TW_ASSERT_MSG(scenario.collective_workload.has_value(), "the loader read its workload");
  sim::Simulator simulator(scenario.cluster, sim_options_of(scenario, report, options), trace);
  report.ranks = simulator.world_size();
  if (scenario.cluster.jitter.enabled()) report.jitter = scenario.cluster.jitter.describe();
  attach_model_hooks(simulator, options);

  SimulatedWorld world(simulator, report);
  const CollectiveRequest request{scenario.cluster, scenario.collective_workload,
                                  scenario.protocol.options, report.seed, report.payload,
                                  on_progress};
  CollectiveOutcome outcome = protocol->run(world, request);
  TW_ASSERT(outcome.counters.empty() || outcome.counters.size() == report.ranks);
  report.protocol_counters = std::move(outcome.counters);
  report.problems = std::move(outcome.problems);
  report.coverage = std::move(outcome.coverage);
  add_dma_problems(report, simulator);
  report.collective = std::move(outcome.account);
  return report;
}

}  // namespace

RunReport run_report_header(const Scenario& scenario, const SimulationOptions& options) {
  RunReport report;
  report.scenario_name = scenario.name;
  report.scenario_path = scenario.source_path;
  report.protocol = scenario.protocol.name;
  report.workload_kind = scenario.workload.kind;
  report.seed = options.has_seed ? options.seed : scenario.seed;
  report.payload = scenario.payload && !options.timing_only;
  return report;
}

void add_transfer_problems(RunReport& report) {
  const WorkloadResult& w = report.workload;
  for (const StepResult& s : w.steps) {
    for (const TransferResult& t : s.transfers) {
      if (std::optional<Problem> p = transfer_problem(s.step_id, t)) {
        report.problems.push_back(std::move(*p));
      }
    }
  }
  if (w.recvs_completed_twice > 0) {
    report.problems.push_back(safety_problem(std::to_string(w.recvs_completed_twice) +
                                             " Recv done callbacks ran more than once"));
  }
}

std::optional<Problem> transfer_problem(uint64_t step_id, const TransferResult& t) {
  // The text only for a problem: a model checker's executions pass here for
  // every transfer, nearly all of them fine.
  if (t.status.is_ok() && t.mismatch.empty()) return std::nullopt;
  const std::string where = "step " + std::to_string(step_id) + " '" + t.name + "' " +
                            std::to_string(t.src) + "->" + std::to_string(t.dst) + ": ";
  if (!t.status.is_ok()) {
    return status_problem(where + "recv failed: " + t.status.to_string(), t.status, t.dst, t.src);
  }
  if (!t.mismatch.empty()) {
    Problem p = safety_problem(where + t.mismatch, t.dst);
    p.peer = t.src;
    return p;
  }
  return std::nullopt;
}

RunReport run_simulation(const Scenario& scenario, const SimulationOptions& options,
                         TraceSink& trace, ProgressCallback on_progress) {
  switch (scenario.protocol.descriptor().shape()) {
    case ProtocolShape::kPointToPoint:
      return run_point_to_point(scenario, options, trace, on_progress);
    case ProtocolShape::kCollective:
      return run_collective(scenario, options, trace, on_progress);
  }
  TW_UNREACHABLE("a protocol of unknown shape");
}

}  // namespace tensorwire
