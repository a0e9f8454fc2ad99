#include "core/protocols/realm_broadcast/realm_broadcast_protocol.h"

#include "core/assert.h"
#include "core/protocols/realm_broadcast/broadcast_coverage.h"
#include "core/protocols/realm_broadcast/broadcast_run.h"
#include "core/protocols/realm_broadcast/broadcast_workload.h"
#include "core/protocols/realm_broadcast/swarm_scenario.h"
#include "core/protocols/realm_broadcast/transfer_operation.h"

namespace tensorwire::collectives {
namespace {

// How the broadcast reads its [workload] and runs (core/collective.h).
class RealmBroadcastCollective final : public CollectiveProtocol {
 public:
  std::vector<std::string_view> workload_keys() const override {
    return broadcast_workload_keys();
  }
  std::any read_workload(const OptionReader& reader, const Cluster& cluster,
                         const CollectiveWorkloadLimits& limits) const override {
    return read_broadcast_workload(reader, cluster, limits);
  }
  // A destination holding every byte is one unit of progress.
  std::string_view progress_unit() const override { return "destinations"; }
  uint64_t payload_bytes(const std::any& workload, const Cluster& cluster) const override {
    uint64_t total = 0;
    for (const auto& [node, bytes] : broadcast_payload_bytes_by_node(workload_of(workload), cluster)) {
      total += bytes;
    }
    return total;
  }
  CollectiveOutcome run(CollectiveWorld& world, const CollectiveRequest& request) const override {
    return run_broadcast(world, request);
  }
};

class RealmCollectiveBroadcastProtocol final : public ProtocolDescriptor {
 public:
  std::string_view name() const override { return "realm_collective_broadcast"; }
  std::string_view summary() const override {
    return "Realm collective broadcast copies (broadcast trees, IB buffers with reference "
           "counts, pipelined producer/consumer flow control)";
  }
  ProtocolShape shape() const override { return ProtocolShape::kCollective; }
  std::vector<std::string_view> workload_kinds() const override { return {"broadcast"}; }
  std::vector<std::string_view> option_keys() const override { return {}; }
  std::any default_options() const override { return RealmBroadcastOptions{}; }
  std::any read_options(const OptionReader& /*reader*/) const override {
    return RealmBroadcastOptions{};
  }

  Coverage coverage(const std::any& /*options*/) const override {
    return broadcast_declared_coverage();
  }

  std::vector<std::string_view> planted_bugs() const override {
    std::vector<std::string_view> names;
    for (PlantedCollectiveBug b : kPlantedCollectiveBugs) {
      names.emplace_back(planted_collective_bug_name(b));
    }
    return names;
  }
  bool plant_bug(std::any& options, std::string_view bug) const override {
    return planted_collective_bug_from_name(bug, options_of(options).planted_bug);
  }
  std::string planted_bug(const std::any& options) const override {
    return planted_collective_bug_name(options_of(options).planted_bug);
  }
  // Its memory is the collective's to estimate (payload_bytes above).
  uint64_t transfer_buffer_bytes(const std::any& /*options*/,
                                 const TensorTransfer& /*transfer*/) const override {
    return 0;
  }
  // Each control message and each write with immediate into an IB buffer
  // consumes a receive: the verbs runner sizes the receive queues by this.
  uint32_t receives_per_peer(const std::any& /*options*/) const override {
    return TransferOperation::kReceivesPerPeer;
  }

  std::unique_ptr<Rendezvous> make_rendezvous(RankEnv /*env*/,
                                              const std::any& /*options*/) const override {
    TW_UNREACHABLE("a collective has no per-pair rendezvous; the runner plans it as a whole");
  }
  // Its invariants (BroadcastInvariants) watch the transfer operations, which
  // its own run (run_broadcast) attaches.
  std::unique_ptr<ProtocolInvariants> make_invariants(
      std::vector<const Rendezvous*> /*ranks*/) const override {
    return nullptr;
  }
  const CollectiveProtocol* collective() const override { return &collective_; }
  std::string draw_swarm_scenario(SwarmDraw& draw) const override {
    return collectives::draw_swarm_scenario(draw);
  }

 private:
  RealmBroadcastCollective collective_;
};

}  // namespace

const ProtocolDescriptor& realm_collective_broadcast_protocol() {
  static const RealmCollectiveBroadcastProtocol protocol;
  return protocol;
}

RealmBroadcastOptions& options_of(std::any& options) {
  auto* o = std::any_cast<RealmBroadcastOptions>(&options);
  TW_ASSERT_MSG(o != nullptr, "options of another protocol");
  return *o;
}

const RealmBroadcastOptions& options_of(const std::any& options) {
  const auto* o = std::any_cast<RealmBroadcastOptions>(&options);
  TW_ASSERT_MSG(o != nullptr, "options of another protocol");
  return *o;
}

}  // namespace tensorwire::collectives
