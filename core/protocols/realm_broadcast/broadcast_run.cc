#include "core/protocols/realm_broadcast/broadcast_run.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/assert.h"
#include "core/protocols/realm_broadcast/broadcast_account.h"
#include "core/protocols/realm_broadcast/broadcast_invariants.h"
#include "core/protocols/realm_broadcast/broadcast_workload.h"
#include "core/protocols/realm_broadcast/realm_broadcast_protocol.h"
#include "core/protocols/realm_broadcast/transfer_operation.h"
#include "core/workload/tensor_content.h"

namespace tensorwire::collectives {
namespace {

constexpr uint64_t kPieceBytes = 16ull << 20;  // fill and check instances piece by piece

uint64_t broadcast_content_key(uint64_t seed) { return content_key(seed, 0, "broadcast"); }

using Instances = std::vector<std::map<uint32_t, Buffer>>;  // [rank][buffer id]

// Progress for `run`'s bar: destinations that hold every byte, of all of them.
class DestinationProgress final : public CollectiveObserver {
 public:
  DestinationProgress(size_t total, std::function<void(size_t, size_t)> on_progress)
      : total_(total), on_progress_(std::move(on_progress)) {}

  void on_destination_complete(uint32_t /*buffer*/, TimeNs /*at_ns*/) override {
    ++done_;
    TW_ASSERT_MSG(done_ <= total_, "each destination completes once");
    if (on_progress_) on_progress_(done_, total_);
  }

 private:
  size_t done_ = 0;
  size_t total_;
  std::function<void(size_t, size_t)> on_progress_;
};

// What one broadcast run holds while it runs: the plan, the simulated
// world, the application's instances and one operation per rank.
struct BroadcastRun {
  const BroadcastWorkload& workload;
  const ClusterTopology& topology;
  const TransferGraph& graph;
  CollectiveWorld& world;
  bool payload = true;
  BroadcastResult& result;
  std::vector<RankEnv> envs;
  Instances instances;
  std::vector<std::unique_ptr<TransferOperation>> ops;
  uint64_t key = 0;
  BroadcastCoverageCounts coverage;  // summed over the ranks
};

// The application's instances: the source (filled in payload mode) and every
// destination. False, with the problem reported, when memory runs out.
bool allocate_instances(BroadcastRun& run, CollectiveOutcome& out) {
  std::vector<std::byte> piece;
  const uint64_t bytes = run.workload.bytes;
  for (const TransferBuffer& b : run.graph.buffers) {
    if (b.role == BufferRole::kIB) continue;
    MemorySpace& memory = run.envs[b.memory.node].memory;
    Result<Buffer> buffer = memory.allocate(run.topology.kind_of(b.memory),
                                            run.topology.device_of(b.memory), bytes);
    if (!buffer) {
      out.problems.push_back(bad_input_problem(b.name() + ": cannot allocate the instance: " +
                                                  buffer.status().message()));
      return false;
    }
    run.instances[b.memory.node][b.id] = *buffer;
    if (b.role != BufferRole::kSource || !run.payload) continue;
    for (uint64_t at = 0; at < bytes; at += kPieceBytes) {
      piece.resize(std::min(kPieceBytes, bytes - at));
      fill_content_at(run.key, at, piece);
      if (Status st = memory.write_bytes(*buffer, at, piece); !st.is_ok()) {
        out.problems.push_back(bad_input_problem("filling the source: " + st.to_string()));
        return false;
      }
    }
  }
  return true;
}

// Each rank's part: its error, or a hang when it went idle unfinished.
void collect_rank_outcomes(const BroadcastRun& run, CollectiveOutcome& out) {
  for (RankId r = 0; r < run.envs.size(); ++r) {
    const TransferOperation& op = *run.ops[r];
    out.counters.push_back(op.counters());
    run.result.copy_first_busy_ns.insert(op.copy_first_busy_ns().begin(),
                                               op.copy_first_busy_ns().end());
    if (!op.status().is_ok()) {
      out.problems.push_back(
          status_problem("rank " + std::to_string(r) + ": " + op.status().to_string(), op.status(), r));
    } else if (!op.finished()) {
      out.problems.push_back(liveness_problem(
          "rank " + std::to_string(r) + " went idle with its part of the broadcast unfinished", r));
    }
  }
}

// Where a destination's bytes differ from the source's, the invariants hear of it.
void check_destination_bytes(BroadcastRun& run, uint32_t d,
                             BroadcastInvariants& invariants) {
  const TransferBuffer& b = run.graph.buffers[d];
  MemorySpace& memory = run.envs[b.memory.node].memory;
  const Buffer& buffer = run.instances[b.memory.node][d];
  std::vector<std::byte> piece;
  const uint64_t bytes = run.workload.bytes;
  for (uint64_t at = 0; at < bytes; at += kPieceBytes) {
    piece.resize(std::min(kPieceBytes, bytes - at));
    if (Status st = memory.read_bytes(buffer, at, piece); !st.is_ok()) {
      invariants.report_destination_mismatch(d, "cannot read it back: " + st.to_string());
      return;
    }
    const size_t bad = first_content_mismatch_at(run.key, at, piece);
    if (bad != piece.size()) {
      invariants.report_destination_mismatch(
          d, "byte " + std::to_string(at + bad) + " differs from the source");
      return;
    }
  }
}

void collect_destinations(BroadcastRun& run, BroadcastInvariants& invariants) {
  BroadcastResult& result = run.result;
  for (uint32_t d : run.graph.destinations) {
    const TransferBuffer& b = run.graph.buffers[d];
    BroadcastDestinationResult dest;
    dest.buffer = d;
    dest.memory = b.memory.name();
    dest.depth = run.graph.depth_of(d);
    const auto& done = run.ops[b.memory.node]->destination_done_ns();
    if (auto it = done.find(d); it != done.end()) {
      dest.done_ns = it->second;
      result.finish_ns = std::max(result.finish_ns, it->second);
    }
    result.destinations.push_back(dest);
    if (run.payload && dest.done_ns >= 0) check_destination_bytes(run, d, invariants);
  }
}

// What must hold once a broadcast has ended (every IB buffer freed, every
// destination complete) is checked only when every rank says its part is
// done. Otherwise a rank's error or its unfinished part is the problem
// reported (collect_rank_outcomes): the end state only restates it, and as a
// safety problem no fault could excuse, which a crashed rank's part, never to
// finish, would always leave behind.
void collect_invariant_violations(const BroadcastRun& run, CollectiveOutcome& out,
                                  BroadcastInvariants& invariants) {
  bool every_part_done = true;
  for (const auto& op : run.ops) every_part_done = every_part_done && op->finished();
  if (every_part_done) invariants.check_at_end();
  for (const std::string& v : invariants.violations()) {
    out.problems.push_back(safety_problem("invariant: " + v));
  }
  if (invariants.violation_count() > invariants.violations().size()) {
    out.problems.push_back(safety_problem(
        "invariant: ... and " +
        std::to_string(invariants.violation_count() - invariants.violations().size()) +
        " more violations"));
  }
}

void collect_links(const BroadcastRun& run, BroadcastResult& result) {
  const std::vector<uint64_t> link_bytes = run.graph.link_bytes(run.topology);
  for (uint32_t l = 0; l < link_bytes.size(); ++l) {
    if (link_bytes[l] == 0) continue;
    result.links.push_back({result.link_names[l], link_bytes[l], result.bound.link_busy_ns[l]});
  }
}

// Starts every rank's operation and lets the world run until it is idle.
void run_operations(BroadcastRun& run, CollectiveOutcome& out, CollectiveObserver& observer,
                    PlantedCollectiveBug planted) {
  for (RankId r = 0; r < run.envs.size(); ++r) {
    run.ops.push_back(std::make_unique<TransferOperation>(
        run.envs[r], run.graph, run.topology, run.workload.options, &observer, planted));
  }
  for (RankId r = 0; r < run.envs.size(); ++r) {
    if (Status st = run.ops[r]->start(run.instances[r]); !st.is_ok()) {
      out.problems.push_back(status_problem(
          "rank " + std::to_string(r) + ": start failed: " + st.to_string(), st, r));
    }
  }
  if (out.problems.empty()) run.world.run_until_idle();
}

void release_run(BroadcastRun& run) {
  for (auto& op : run.ops) op->release();
  for (RankId r = 0; r < run.instances.size(); ++r) {
    for (const auto& [id, buffer] : run.instances[r]) run.envs[r].memory.free(buffer);
  }
}

}  // namespace

CollectiveOutcome run_broadcast(CollectiveWorld& world, const CollectiveRequest& request) {
  const BroadcastWorkload& w = workload_of(request.workload);
  BroadcastResult result;
  result.bytes = w.bytes;
  result.options = w.options;
  result.algorithm = broadcast_algorithm_name(w.options.algorithm);
  CollectiveOutcome out;
  ClusterTopology topology(request.cluster);
  Result<TransferGraph> planned =
      plan_broadcast(topology, w.source, w.destinations, w.bytes, w.options);
  if (!planned) {
    out.problems.push_back(bad_input_problem("plan: " + planned.status().message()));
    out.coverage = broadcast_declared_coverage();
    return out;
  }
  result.graph = std::move(planned).value();
  for (uint32_t l = 0; l < topology.link_count(); ++l) result.link_names.push_back(topology.link_name({l}));
  result.bound = pipelined_lower_bound(result.graph, topology, w.options.max_chunk_bytes);
  result.physical = physical_lower_bound(topology, w.source, w.destinations, w.bytes);
  result.planners = bound_every_planner(topology, w.source, w.destinations, w.bytes, w.options);

  const uint32_t ranks = world.world_size();
  TW_ASSERT_MSG(ranks == request.cluster.nodes, "one rank per node of the cluster");
  BroadcastInvariants invariants(result.graph);
  BroadcastRun run{w, topology, result.graph, world, request.payload, result, {},
                   Instances(ranks), {}, broadcast_content_key(request.seed), {}};
  for (RankId r = 0; r < ranks; ++r) run.envs.push_back(world.env(r));
  if (allocate_instances(run, out)) {
    DestinationProgress progress(run.graph.destinations.size(), request.on_progress);
    CollectiveObserverPair observer(invariants, progress);
    run_operations(run, out, observer, options_of(request.options).planted_bug);
    collect_rank_outcomes(run, out);
    collect_destinations(run, invariants);
    collect_invariant_violations(run, out, invariants);
    collect_links(run, result);
    world.record_end();
  }
  for (const auto& op : run.ops) run.coverage.add(op->coverage_counts());
  release_run(run);
  run.coverage.count(algorithm_path(w.options.algorithm));
  out.coverage = broadcast_coverage(run.coverage);
  out.account = std::make_shared<const BroadcastAccount>(std::move(result));
  return out;
}

}  // namespace tensorwire::collectives
