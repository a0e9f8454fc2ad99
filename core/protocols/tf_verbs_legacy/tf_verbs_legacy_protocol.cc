#include "core/protocols/tf_verbs_legacy/tf_verbs_legacy_protocol.h"

#include <memory>
#include <utility>

#include "core/assert.h"
#include "core/protocols/tf_verbs_legacy/legacy_invariants.h"
#include "core/protocols/tf_verbs_legacy/legacy_rendezvous.h"
#include "core/protocols/tf_verbs_legacy/swarm_scenario.h"

namespace tensorwire::tf_legacy {
namespace {

class TfVerbsLegacyProtocol final : public ProtocolDescriptor {
 public:
  std::string_view name() const override { return "tf_verbs_legacy"; }
  std::string_view summary() const override {
    return "TensorFlow verbs before zero-copy: one message buffer per direction, ACKs, and a "
           "registered tensor buffer per tensor that each tensor is copied into and out of";
  }
  ProtocolShape shape() const override { return ProtocolShape::kPointToPoint; }
  std::vector<std::string_view> workload_kinds() const override {
    return {"tensors", "parameter_server"};
  }
  std::vector<std::string_view> option_keys() const override {
    return {"tensor_buffers_per_peer", "receives_per_peer", kChannelsOptionKey};
  }
  std::any default_options() const override { return LegacyOptions{}; }

  std::any read_options(const OptionReader& reader) const override {
    LegacyOptions o;
    o.tensor_buffers_per_peer = static_cast<uint32_t>(
        reader.integer("tensor_buffers_per_peer", 1, kMaxTensorBuffersPerPeer)
            .value_or(o.tensor_buffers_per_peer));
    o.receives_per_peer = static_cast<uint32_t>(
        reader.integer("receives_per_peer", 4, kMaxReceivesPerPeer).value_or(o.receives_per_peer));
    o.channels = read_channel_scope(reader, o.channels);
    return o;
  }

  Coverage coverage(const std::any& /*options*/) const override {
    return legacy_declared_coverage();
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
    return options_of(options).receives_per_peer;
  }

  std::unique_ptr<Rendezvous> make_rendezvous(RankEnv env, const std::any& options) const override {
    return std::make_unique<LegacyRendezvous>(env, options_of(options));
  }

  std::unique_ptr<ProtocolInvariants> make_invariants(
      std::vector<const Rendezvous*> ranks) const override {
    std::vector<const LegacyRendezvous*> mine;
    mine.reserve(ranks.size());
    for (const Rendezvous* r : ranks) {
      const auto* p = dynamic_cast<const LegacyRendezvous*>(r);
      TW_ASSERT_MSG(p != nullptr, "invariants built over another protocol's instances");
      mine.push_back(p);
    }
    return std::make_unique<LegacyInvariants>(mine);
  }

  // The sender's and the receiver's tensor buffers, and host staging for a
  // GPU on either side (the legacy path never reaches GPU memory directly).
  uint64_t transfer_buffer_bytes(const std::any& /*options*/, const TensorTransfer& t) const override {
    if (t.is_dead || t.dtype == DataType::kString) return 0;
    const uint64_t bytes = t.shape.num_elements().value_or(0) * data_type_size(t.dtype);
    return 2 * bytes + (is_device(t.src_kind) ? bytes : 0) + (is_device(t.dst_kind) ? bytes : 0);
  }

  const CollectiveProtocol* collective() const override { return nullptr; }

  std::string draw_swarm_scenario(SwarmDraw& draw) const override {
    return tf_legacy::draw_swarm_scenario(draw);
  }
};

}  // namespace

const ProtocolDescriptor& tf_verbs_legacy_protocol() {
  static const TfVerbsLegacyProtocol protocol;
  return protocol;
}

LegacyOptions& options_of(std::any& options) {
  auto* o = std::any_cast<LegacyOptions>(&options);
  TW_ASSERT_MSG(o != nullptr, "options of another protocol");
  return *o;
}

const LegacyOptions& options_of(const std::any& options) {
  const auto* o = std::any_cast<LegacyOptions>(&options);
  TW_ASSERT_MSG(o != nullptr, "options of another protocol");
  return *o;
}

}  // namespace tensorwire::tf_legacy
