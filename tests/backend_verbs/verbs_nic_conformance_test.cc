// The NIC conformance suite (tests/nic_conformance/nic_conformance.h) over the
// verbs NIC: VerbsNicCluster is its NIC cluster fixture, ranks in one process
// on the device scripts/with_rdma.sh names (tests/backend_verbs/verbs_cluster.h).
// Every case skips with "no RDMA device: ..." where there is none.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend_verbs/monotonic_clock.h"
#include "backend_verbs/verbs_copy_engine.h"
#include "backend_verbs/verbs_memory_space.h"
#include "core/trace_sink.h"
#include "tests/nic_conformance/nic_conformance.h"
#include "tests/backend_verbs/verbs_cluster.h"

namespace tensorwire::nic_conformance {
namespace {

using verbs::testing::VerbsCluster;

class VerbsNicCluster {
 public:
  static constexpr const char* kBackend = "verbs";
  static std::string unavailable_reason() { return verbs::testing::rdma_unavailable_reason(); }

  // VerbsCluster's small queues, with the options' send queue depth and
  // receiver-not-ready retries (the queue pairs' rnr_retry, 7 = forever).
  static Result<std::unique_ptr<VerbsNicCluster>> start(const NicClusterOptions& options) {
    verbs::VerbsNicOptions nic_options = VerbsCluster::default_options();
    nic_options.send_queue_depth = options.send_queue_depth;
    nic_options.rnr_retry_count = options.rnr_retry_count;
    std::unique_ptr<VerbsNicCluster> self(new VerbsNicCluster());
    for (RankId r = 0; r < options.world; ++r) self->hosts_.push_back(std::make_unique<Host>());
    Result<std::unique_ptr<VerbsCluster>> cluster = VerbsCluster::start(options.world, nic_options);
    if (!cluster.is_ok()) return cluster.status();
    self->cluster_ = std::move(*cluster);
    return self;
  }

  RankEnv env(RankId r) {
    Host& host = *hosts_[r];
    return RankEnv{cluster_->nic(r), host.clock, host.copy_engine, host.memory, trace_};
  }

  // Polls every rank's completion queue until done() holds; false after
  // VerbsCluster's timeout (10 s: soft-RoCE is slow, but not that slow).
  bool progress_until(const std::function<bool()>& done) {
    return cluster_->progress_until(done);
  }

  // The NIC's error completions in verbs' own words (IBV_WC_..., vendor_err).
  std::string diagnostics(RankId r) {
    std::string out;
    for (const std::string& line : cluster_->nic(r).diagnostics()) out += "\n  " + line;
    return out;
  }

 private:
  // One rank's side of the machine, besides its NIC.
  struct Host {
    verbs::VerbsMemorySpace memory;
    verbs::MonotonicClock clock;
    verbs::VerbsCopyEngine copy_engine{memory};
  };

  VerbsNicCluster() = default;

  NullTraceSink trace_;
  // Declared before the cluster, destroyed after it: the NICs deregister
  // their regions before the memory under them is freed.
  std::vector<std::unique_ptr<Host>> hosts_;
  std::unique_ptr<VerbsCluster> cluster_;
};

static_assert(NicClusterFixture<VerbsNicCluster>);

INSTANTIATE_TYPED_TEST_SUITE_P(Verbs, NicConformance, ::testing::Types<VerbsNicCluster>);

}  // namespace
}  // namespace tensorwire::nic_conformance
