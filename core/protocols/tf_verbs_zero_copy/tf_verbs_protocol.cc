#include "core/protocols/tf_verbs_zero_copy/tf_verbs_protocol.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/assert.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_rendezvous.h"
#include "core/protocols/tf_verbs_zero_copy/swarm_scenario.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_invariants.h"

namespace tensorwire::tf_verbs {
namespace {

// An hour: longer than any run the harness makes.
constexpr TimeNs kMaxRequestTimeoutNs = 3600LL * 1000 * 1000 * 1000;

class TfVerbsZeroCopyProtocol final : public ProtocolDescriptor {
 public:
  std::string_view name() const override { return "tf_verbs_zero_copy"; }
  std::string_view summary() const override {
    return "TensorFlow verbs zero-copy Request/Response (meta-data cache, re-request, "
           "request_index as the write immediate)";
  }
  ProtocolShape shape() const override { return ProtocolShape::kPointToPoint; }
  std::vector<std::string_view> workload_kinds() const override {
    return {"tensors", "parameter_server"};
  }
  std::vector<std::string_view> option_keys() const override {
    return {"control_ring_size", "request_timeout", kChannelsOptionKey};
  }
  std::any default_options() const override { return TfVerbsOptions{}; }

  std::any read_options(const OptionReader& reader) const override {
    TfVerbsOptions o;
    o.control_ring_size = static_cast<uint32_t>(
        reader.integer("control_ring_size", 1, kMaxControlRingSize).value_or(o.control_ring_size));
    o.request_timeout_ns =
        reader.duration("request_timeout", kMaxRequestTimeoutNs).value_or(o.request_timeout_ns);
    o.channels = read_channel_scope(reader, o.channels);
    return o;
  }

  Coverage coverage(const std::any& options) const override {
    return tf_verbs_declared_coverage(options_of(options));
  }

  std::vector<std::string_view> planted_bugs() const override {
    std::vector<std::string_view> names;
    for (PlantedBug b : kPlantedBugs) names.emplace_back(planted_bug_name(b));
    return names;
  }
  bool plant_bug(std::any& options, std::string_view bug) const override {
    return planted_bug_from_name(bug, options_of(options).planted_bug);
  }
  std::string planted_bug(const std::any& options) const override {
    return planted_bug_name(options_of(options).planted_bug);
  }

  uint32_t receives_per_peer(const std::any& options) const override {
    return options_of(options).control_ring_size;
  }

  std::unique_ptr<Rendezvous> make_rendezvous(RankEnv env, const std::any& options) const override {
    return std::make_unique<RdmaRendezvous>(env, options_of(options));
  }

  std::unique_ptr<ProtocolInvariants> make_invariants(
      std::vector<const Rendezvous*> ranks) const override {
    std::vector<const RdmaRendezvous*> mine;
    mine.reserve(ranks.size());
    for (const Rendezvous* r : ranks) {
      const auto* p = dynamic_cast<const RdmaRendezvous*>(r);
      TW_ASSERT_MSG(p != nullptr, "invariants built over another protocol's instances");
      mine.push_back(p);
    }
    return std::make_unique<TfVerbsInvariants>(std::move(mine));
  }
  // A Response clones a host source (or stages a GPU one) before writing it,
  // unless the NIC reads it in place; a Request whose GPU the NIC cannot
  // reach receives into a host proxy first. String tensors: a proto buffer
  // each side, about as large as the tensor.
  uint64_t transfer_buffer_bytes(const std::any& /*options*/,
                                 const TensorTransfer& t) const override {
    if (t.is_dead) return 0;
    const uint64_t bytes =
        t.dtype == DataType::kString
            ? t.shape.num_elements().value_or(0) * (uint64_t{t.string_bytes} + 8)
            : t.shape.num_elements().value_or(0) * data_type_size(t.dtype);
    return bytes + (is_nic_reachable(t.dst_kind) ? 0 : bytes);
  }

  // A point-to-point protocol: make_rendezvous is how it runs.
  const CollectiveProtocol* collective() const override { return nullptr; }

  std::string draw_swarm_scenario(SwarmDraw& draw) const override {
    return tf_verbs::draw_swarm_scenario(draw);
  }
};

}  // namespace

const ProtocolDescriptor& tf_verbs_zero_copy_protocol() {
  static const TfVerbsZeroCopyProtocol protocol;
  return protocol;
}

TfVerbsOptions& options_of(std::any& options) {
  auto* o = std::any_cast<TfVerbsOptions>(&options);
  TW_ASSERT_MSG(o != nullptr, "options of another protocol");
  return *o;
}

const TfVerbsOptions& options_of(const std::any& options) {
  const auto* o = std::any_cast<TfVerbsOptions>(&options);
  TW_ASSERT_MSG(o != nullptr, "options of another protocol");
  return *o;
}

}  // namespace tensorwire::tf_verbs
