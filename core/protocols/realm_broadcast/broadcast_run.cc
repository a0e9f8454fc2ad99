#include "core/protocols/realm_broadcast/broadcast_run.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <vector>

#include "core/assert.h"
#include "core/protocols/realm_broadcast/broadcast_account.h"
#include "core/protocols/realm_broadcast/broadcast_invariants.h"
#include "core/protocols/realm_broadcast/broadcast_rank_part.h"
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
  std::map<RankId, RankEnv> envs;  // the ranks this process drives
  Instances instances;
  std::map<RankId, std::unique_ptr<TransferOperation>> ops;
  uint64_t key = 0;
  BroadcastCoverageCounts coverage;  // summed over the ranks
};

// The application's instances: the source (filled in payload mode) and every
// destination. False, with the problem reported, when memory runs out.
bool allocate_instances(BroadcastRun& run, CollectiveOutcome& out) {
  std::vector<std::byte> piece;
  const uint64_t bytes = run.workload.bytes;
  for (const TransferBuffer& b : run.graph.buffers) {
    if (b.role == BufferRole::kIB || !run.envs.contains(b.memory.node)) continue;
    MemorySpace& memory = run.envs.at(b.memory.node).memory;
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
  for (const auto& [r, op_ptr] : run.ops) {
    const TransferOperation& op = *op_ptr;
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
  MemorySpace& memory = run.envs.at(b.memory.node).memory;
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

// When each destination held every byte (`done_ns`, by buffer, over every
// rank), and in payload mode its bytes, where it lives in this process.
void collect_destinations(BroadcastRun& run, const std::map<uint32_t, TimeNs>& done_ns,
                          BroadcastInvariants& invariants, bool check_bytes = true) {
  BroadcastResult& result = run.result;
  for (uint32_t d : run.graph.destinations) {
    const TransferBuffer& b = run.graph.buffers[d];
    BroadcastDestinationResult dest;
    dest.buffer = d;
    dest.memory = b.memory.name();
    dest.depth = run.graph.depth_of(d);
    if (auto it = done_ns.find(d); it != done_ns.end()) {
      dest.done_ns = it->second;
      result.finish_ns = std::max(result.finish_ns, it->second);
    }
    result.destinations.push_back(dest);
    if (check_bytes && run.payload && dest.done_ns >= 0 && run.envs.contains(b.memory.node)) {
      check_destination_bytes(run, d, invariants);
    }
  }
}

// Every destination's done time this process knows, by buffer.
std::map<uint32_t, TimeNs> local_destination_done_ns(const BroadcastRun& run) {
  std::map<uint32_t, TimeNs> done;
  for (const auto& [r, op] : run.ops) {
    done.insert(op->destination_done_ns().begin(), op->destination_done_ns().end());
  }
  return done;
}

// What must hold once a broadcast has ended (every IB buffer freed, every
// destination complete) is checked only when every rank says its part is
// done. Otherwise a rank's error or its unfinished part is the problem
// reported (collect_rank_outcomes): the end state only restates it, and as a
// safety problem no fault could excuse, which a crashed rank's part, never to
// finish, would always leave behind.
void collect_invariant_violations(const BroadcastRun& run, CollectiveOutcome& out,
                                  BroadcastInvariants& invariants) {
  // Only a process that drives every rank has seen the whole broadcast.
  bool every_part_done = run.envs.size() == run.world.world_size();
  for (const auto& [r, op] : run.ops) every_part_done = every_part_done && op->finished();
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
  for (const auto& [r, env] : run.envs) {
    run.ops.emplace(r, std::make_unique<TransferOperation>(env, run.graph, run.topology,
                                                           run.workload.options, &observer,
                                                           planted));
  }
  std::set<RankId> failed_to_start;
  for (const auto& [r, op] : run.ops) {
    if (Status st = op->start(run.instances[r]); !st.is_ok()) {
      out.problems.push_back(status_problem(
          "rank " + std::to_string(r) + ": start failed: " + st.to_string(), st, r));
      failed_to_start.insert(r);
    }
  }
  // A part is over when it finished or failed; a rank whose start failed
  // still meets the others (its problem is reported at the gather).
  const auto parts_over = [&run, &failed_to_start] {
    for (const auto& [r, op] : run.ops) {
      if (!failed_to_start.contains(r) && !op->finished() && op->status().is_ok()) return false;
    }
    return true;
  };
  if (out.problems.empty() || run.envs.size() < run.world.world_size()) {
    run.world.run_until_done(parts_over);
  }
}

void release_run(BroadcastRun& run) {
  for (auto& [r, op] : run.ops) op->release();
  for (RankId r = 0; r < run.instances.size(); ++r) {
    for (const auto& [id, buffer] : run.instances[r]) run.envs.at(r).memory.free(buffer);
  }
}

// One process drives every rank (the simulator): the invariants observe the
// whole cluster as it runs.
void run_whole(BroadcastRun& run, CollectiveOutcome& out, BroadcastInvariants& invariants,
               const CollectiveRequest& request, PlantedCollectiveBug planted) {
  if (allocate_instances(run, out)) {
    DestinationProgress progress(run.graph.destinations.size(), request.on_progress);
    CollectiveObserverPair observer(invariants, progress);
    run_operations(run, out, observer, planted);
    collect_rank_outcomes(run, out);
    collect_destinations(run, local_destination_done_ns(run), invariants);
    collect_invariant_violations(run, out, invariants);
    collect_links(run, run.result);
    run.world.record_end();
  }
  for (const auto& [r, op] : run.ops) run.coverage.add(op->coverage_counts());
}

// This process's part, for the others.
// This process's part, for the others; its times count from `started_ns`.
BroadcastRankPart local_part(const BroadcastRun& run, RankId rank, CollectiveOutcome& local,
                             TimeNs started_ns) {
  BroadcastRankPart part;
  part.rank = rank;
  if (!local.counters.empty()) part.counters = local.counters.front();
  part.problems = std::move(local.problems);
  if (const auto it = run.ops.find(rank); it != run.ops.end()) {
    for (const auto& [id, ns] : it->second->destination_done_ns()) {
      part.destination_done_ns[id] = ns - started_ns;
    }
    for (const auto& [id, ns] : it->second->copy_first_busy_ns()) {
      part.copy_first_busy_ns[id] = ns - started_ns;
    }
    part.coverage = it->second->coverage_counts();
  }
  return part;
}

// Every rank has its instances (the source filled) before any part starts,
// so that a part's time is the broadcast's and not its neighbours' set-up.
// False when a rank could not have them (it reports why) or a rank was lost:
// then no part starts.
bool every_rank_ready(BroadcastRun& run, bool ready, CollectiveOutcome& local) {
  Result<std::vector<std::string>> all = run.world.all_gather(ready ? "ready" : "");
  if (!all.is_ok()) {
    local.problems.push_back(transport_problem("the ranks could not agree to start the broadcast: " +
                                               all.status().message()));
    return false;
  }
  for (const std::string& r : *all) ready = ready && r == "ready";
  return ready;
}

// Every rank's part, in rank order; only this one's when the gather failed
// or a part was malformed (the problem says so).
std::vector<BroadcastRankPart> gather_parts(BroadcastRun& run, BroadcastRankPart mine) {
  std::vector<BroadcastRankPart> parts;
  Result<std::vector<std::string>> gathered =
      run.world.all_gather(encode_broadcast_rank_part(mine));
  if (!gathered.is_ok()) {
    mine.problems.push_back(transport_problem(
        "the ranks' parts of the broadcast could not be gathered (only rank " +
            std::to_string(mine.rank) + "'s is reported): " + gathered.status().message(),
        mine.rank));
    return {std::move(mine)};
  }
  for (RankId r = 0; r < gathered->size(); ++r) {
    Result<BroadcastRankPart> part =
        r == mine.rank ? Result<BroadcastRankPart>(mine)
                       : decode_broadcast_rank_part((*gathered)[r], r, run.graph.buffers.size(),
                                                    run.graph.copies.size());
    if (!part.is_ok()) {
      mine.problems.push_back(bad_input_problem(part.status().message()));
      return {std::move(mine)};
    }
    parts.push_back(std::move(*part));
  }
  return parts;
}

// Each rank is a process of its own (verbs): this one runs and checks its
// own rank's part (its instances, its destinations' bytes), then the ranks
// all-gather their parts and each merges them into the whole run's outcome.
// The invariants that need every rank's view as it runs (ring bytes read
// before reuse, IB buffers freed after their last consumer) are the
// simulator's; here a rank hears only its own events.
void run_distributed(BroadcastRun& run, CollectiveOutcome& out, BroadcastInvariants& invariants,
                     PlantedCollectiveBug planted) {
  TW_ASSERT_MSG(run.envs.size() == 1, "a distributed world drives one rank per process");
  const RankId rank = run.envs.begin()->first;
  CollectiveOutcome local;
  const bool ready = every_rank_ready(run, allocate_instances(run, local), local);
  const TimeNs started_ns = run.envs.at(rank).clock.now_ns();
  if (ready) {
    CollectiveObserver no_observer;
    run_operations(run, local, no_observer, planted);
    collect_rank_outcomes(run, local);
    for (uint32_t d : run.graph.destinations) {
      const bool done = run.ops.contains(rank) &&
                        run.ops.at(rank)->destination_done_ns().contains(d);
      if (run.payload && done) check_destination_bytes(run, d, invariants);
    }
    collect_invariant_violations(run, local, invariants);
  }
  std::map<uint32_t, TimeNs> done_ns;
  for (BroadcastRankPart& part : gather_parts(run, local_part(run, rank, local, started_ns))) {
    out.counters.push_back(std::move(part.counters));
    for (Problem& p : part.problems) out.problems.push_back(std::move(p));
    done_ns.insert(part.destination_done_ns.begin(), part.destination_done_ns.end());
    run.result.copy_first_busy_ns.insert(part.copy_first_busy_ns.begin(),
                                         part.copy_first_busy_ns.end());
    run.coverage.add(part.coverage);
  }
  run.result.measured = true;
  collect_destinations(run, done_ns, invariants, /*check_bytes=*/false);
  collect_links(run, run.result);
  run.world.record_end();
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
  for (RankId r : world.local_ranks()) run.envs.emplace(r, world.env(r));
  const PlantedCollectiveBug planted = options_of(request.options).planted_bug;
  if (run.envs.size() == ranks) {
    run_whole(run, out, invariants, request, planted);
  } else {
    run_distributed(run, out, invariants, planted);
  }
  release_run(run);
  run.coverage.count(algorithm_path(w.options.algorithm));
  out.coverage = broadcast_coverage(run.coverage);
  out.account = std::make_shared<const BroadcastAccount>(std::move(result));
  return out;
}

}  // namespace tensorwire::collectives
