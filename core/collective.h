// The seam for collective protocols, as core/rendezvous.h is the seam for
// point-to-point ones. A collective (Realm's broadcast) is one operation over
// many ranks, planned as a whole: the protocol reads its own [workload] table,
// runs on whatever world a backend gives it, and gives back its problems, its
// per-rank counters and an account of the run it renders itself (the summary's
// middle section, its keys in the results JSON, a graph). Nothing above
// core/protocols/ knows what a broadcast is.
#pragma once

#include <any>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/cluster.h"
#include "core/coverage.h"
#include "core/option_reader.h"
#include "core/problem.h"
#include "core/protocol_counters.h"
#include "core/rank_env.h"
#include "core/status.h"

namespace tensorwire {

// What a collective protocol needs of a backend: one environment per rank and
// a way to let the world run (the simulator runs its events until none are left).
class CollectiveWorld {
 public:
  virtual ~CollectiveWorld() = default;

  virtual uint32_t world_size() const = 0;
  // The ranks this process drives, in rank order: every rank where one
  // process runs them all (the simulator), only its own where each rank is a
  // process of its own (verbs). env() is asked only for these.
  virtual std::vector<RankId> local_ranks() const {
    std::vector<RankId> all(world_size());
    for (RankId r = 0; r < all.size(); ++r) all[r] = r;
    return all;
  }
  virtual RankEnv env(RankId rank) = 0;
  // Returns when nothing is left to happen.
  virtual void run_until_idle() = 0;
  // Returns once `done` holds (this process's parts of the operation are
  // over) and every other process says the same of its own, or when nothing
  // more can happen. A world that sees every rank knows when it is idle, and
  // runs until then: the default.
  virtual void run_until_done(const std::function<bool()>& done) {
    (void)done;
    run_until_idle();
  }
  // Every process's `mine`, in rank order, so that each can merge what the
  // others found; a world of one process has only its own. An error when a
  // process is lost or says something malformed.
  virtual Result<std::vector<std::string>> all_gather(std::string_view mine) {
    return std::vector<std::string>{std::string(mine)};
  }
  // The operation is over: it ran and was checked, and its resources are not
  // yet released. The backend takes the run's end time and counters here, so
  // that tearing down is not part of the run. Not called for an operation
  // that never started (its plan or its memory failed).
  virtual void record_end() = 0;
};

// One run asked of a collective protocol.
struct CollectiveRequest {
  const Cluster& cluster;
  const std::any& workload;  // what read_workload returned
  const std::any& options;   // the protocol's [protocol.<name>] options
  uint64_t seed = 0;
  bool payload = true;  // move and check real bytes, or timing only
  // Called as the operation's pieces of work (CollectiveProtocol::
  // progress_unit()) complete, with how many of how many; may be empty.
  std::function<void(size_t done, size_t total)> on_progress;
};

// A collective's own lower bound on its operation's time, from its plan, and
// the time the operation took: what the summary's "where the time went"
// section measures efficiency against.
struct CollectiveTimeBound {
  TimeNs bound_ns = 0;
  TimeNs achieved_ns = 0;
  std::string what;  // how the bound is made ("busiest link + depth x chunk")
};

// The protocol's account of one run, rendered by the protocol itself.
class CollectiveAccount {
 public:
  virtual ~CollectiveAccount() = default;

  // The plan's bound and the operation's time; nullopt for a protocol whose
  // plan gives none (the resource bound still applies).
  virtual std::optional<CollectiveTimeBound> time_bound() const { return std::nullopt; }

  // The summary's middle section: what was asked, the plan, the outcome.
  virtual std::string summary_section() const = 0;
  // The summary's PASS line: what a passing run showed.
  virtual std::string pass_line(bool payload) const = 0;
  // Adds the protocol's keys ("workload", its plan and outcome) to a run's
  // results JSON; `workload_kind` is the scenario's [workload] kind.
  virtual void add_results(nlohmann::ordered_json& results,
                           std::string_view workload_kind) const = 0;
  // The plan as Graphviz DOT, headed by `title` (the scenario's name).
  virtual std::string graph_dot(std::string_view title) const = 0;
};

// What a collective run leaves behind.
struct CollectiveOutcome {
  // Every problem found: plan errors (bad_input), rank errors (transport),
  // unfinished ranks (liveness), broken invariants and wrong bytes (safety).
  std::vector<Problem> problems;
  std::vector<ProtocolCounters> counters;  // per rank; empty when nothing ran
  // The protocol's declared coverage (ProtocolDescriptor::coverage) with what
  // this run reached, summed over the ranks.
  Coverage coverage;
  // nullptr only when the operation could not even be planned.
  std::shared_ptr<const CollectiveAccount> account;
};

// Payload mode holds real bytes in memory; a workload that would hold more
// than this on one node is refused when it is read.
struct CollectiveWorkloadLimits {
  bool payload = true;
  uint64_t max_payload_bytes_per_node = 0;
};

// The collective half of a protocol descriptor (ProtocolDescriptor::collective()).
class CollectiveProtocol {
 public:
  virtual ~CollectiveProtocol() = default;

  // The keys its [workload] table may hold beside "kind".
  virtual std::vector<std::string_view> workload_keys() const = 0;
  // Reads and validates the [workload] table (errors throw from `reader`,
  // naming file, line and key): the result is the protocol's own type.
  virtual std::any read_workload(const OptionReader& reader, const Cluster& cluster,
                                 const CollectiveWorkloadLimits& limits) const = 0;
  // What progress counts, for progress bars ("destinations").
  virtual std::string_view progress_unit() const = 0;
  // The bytes a payload-mode run of `workload` (what read_workload returned)
  // holds in memory over all ranks: every instance and the protocol's own
  // buffers. An estimate made before a run, so that one too big for the
  // machine is refused before anything is allocated.
  virtual uint64_t payload_bytes(const std::any& workload, const Cluster& cluster) const = 0;
  // Runs the operation in `world` until it is idle, checking as it goes.
  virtual CollectiveOutcome run(CollectiveWorld& world, const CollectiveRequest& request) const = 0;
};

}  // namespace tensorwire
