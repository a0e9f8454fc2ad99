// The NIC conformance suite (nic_conformance.h) over the simulator's NIC:
// SimNicCluster is the simulator's NIC cluster fixture.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend_sim/simulator.h"
#include "core/trace_sink.h"
#include "tests/nic_conformance/nic_conformance.h"

namespace tensorwire::nic_conformance {
namespace {

// Keeps the simulator's error instants ("send failed", "queue pair error")
// of every rank, for failure messages.
class ErrorLog final : public TraceSink {
 public:
  void slice(std::string_view, std::string_view, TimeNs, TimeNs, std::string_view) override {}
  void instant(std::string_view track, std::string_view name, TimeNs at_ns,
               std::string_view detail) override {
    lines_.push_back(std::string(track) + " @" + std::to_string(at_ns) + "ns: " +
                     std::string(name) + " (" + std::string(detail) + ")");
  }
  // Lines of the track "rank r".
  std::string of_rank(RankId r) const {
    const std::string prefix = "rank " + std::to_string(r) + " ";
    std::string out;
    for (const std::string& line : lines_) {
      if (line.starts_with(prefix)) out += "\n  " + line;
    }
    return out;
  }

 private:
  std::vector<std::string> lines_;
};

class SimNicCluster {
 public:
  static constexpr const char* kBackend = "simulator";
  // The simulator runs anywhere.
  static std::string unavailable_reason() { return {}; }

  // Every NicClusterOptions field is a Cluster field of the same meaning
  // (rnr_retry_count 7 retries forever, as in verbs).
  static Result<std::unique_ptr<SimNicCluster>> start(const NicClusterOptions& options) {
    Cluster cluster;
    cluster.nodes = options.world;
    cluster.send_queue_depth = options.send_queue_depth;
    cluster.rnr_retry_count = options.rnr_retry_count;
    return std::unique_ptr<SimNicCluster>(new SimNicCluster(cluster));
  }

  RankEnv env(RankId r) { return simulator_.env(r); }

  // Runs simulated events until done() holds. Deterministic: no timeout, but
  // false once no event is left (nothing more can happen) or after a bound
  // that only a livelock (a receiver-not-ready retried forever) reaches.
  bool progress_until(const std::function<bool()>& done) {
    for (uint64_t events = 0; events < kMaxEvents; ++events) {
      if (done()) return true;
      if (!simulator_.step()) return done();
    }
    return done();
  }

  std::string diagnostics(RankId r) const { return errors_.of_rank(r); }

 private:
  static constexpr uint64_t kMaxEvents = 10'000'000;

  explicit SimNicCluster(const Cluster& cluster)
      : simulator_(cluster, sim::SimOptions{1, /*payload=*/true}, errors_) {}

  ErrorLog errors_;  // declared first: the simulator reports to it until it is gone
  sim::Simulator simulator_;
};

static_assert(NicClusterFixture<SimNicCluster>);

INSTANTIATE_TYPED_TEST_SUITE_P(Simulator, NicConformance, ::testing::Types<SimNicCluster>);

}  // namespace
}  // namespace tensorwire::nic_conformance
