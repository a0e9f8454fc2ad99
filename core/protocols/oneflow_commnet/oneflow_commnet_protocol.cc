#include "core/protocols/oneflow_commnet/oneflow_commnet_protocol.h"

#include <memory>
#include <utility>

#include "core/assert.h"
#include "core/protocols/oneflow_commnet/commnet_invariants.h"
#include "core/protocols/oneflow_commnet/commnet_rendezvous.h"
#include "core/protocols/oneflow_commnet/swarm_scenario.h"

namespace tensorwire::oneflow {
namespace {

class OneFlowCommNetProtocol final : public ProtocolDescriptor {
 public:
  std::string_view name() const override { return "oneflow_commnet"; }
  std::string_view summary() const override {
    return "OneFlow CommNet: eager messages into pre-posted receives, long tensors by chunked "
           "RDMA read of a registered token, READ_DONE releases it";
  }
  ProtocolShape shape() const override { return ProtocolShape::kPointToPoint; }
  std::vector<std::string_view> workload_kinds() const override {
    return {"tensors", "parameter_server"};
  }
  std::vector<std::string_view> option_keys() const override {
    return {"receive_pool_size", "eager_max_bytes", "read_chunk_bytes", "max_reads_in_flight",
            kChannelsOptionKey};
  }
  std::any default_options() const override { return CommNetOptions{}; }

  std::any read_options(const OptionReader& reader) const override {
    CommNetOptions o;
    o.receive_pool_size = static_cast<uint32_t>(
        reader.integer("receive_pool_size", kMinReceivePoolSize, kMaxReceivePoolSize)
            .value_or(o.receive_pool_size));
    o.eager_max_bytes = reader.bytes("eager_max_bytes", kMaxEagerBytes).value_or(o.eager_max_bytes);
    o.read_chunk_bytes =
        reader.bytes("read_chunk_bytes", kMaxReadChunkBytes).value_or(o.read_chunk_bytes);
    if (o.read_chunk_bytes == 0) {
      // Through the reader's own error path: the loader names the file and key.
      (void)reader.integer("read_chunk_bytes", 1, static_cast<int64_t>(kMaxReadChunkBytes));
    }
    o.max_reads_in_flight = static_cast<uint32_t>(
        reader.integer("max_reads_in_flight", 1, kMaxReadsInFlight).value_or(o.max_reads_in_flight));
    o.channels = read_channel_scope(reader, o.channels);
    return o;
  }

  Coverage coverage(const std::any& options) const override {
    return commnet_declared_coverage(options_of(options));
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
    return options_of(options).receive_pool_size;
  }

  std::unique_ptr<Rendezvous> make_rendezvous(RankEnv env, const std::any& options) const override {
    return std::make_unique<CommNetRendezvous>(env, options_of(options));
  }

  std::unique_ptr<ProtocolInvariants> make_invariants(
      std::vector<const Rendezvous*> ranks) const override {
    std::vector<const CommNetRendezvous*> mine;
    mine.reserve(ranks.size());
    for (const Rendezvous* r : ranks) {
      const auto* p = dynamic_cast<const CommNetRendezvous*>(r);
      TW_ASSERT_MSG(p != nullptr, "invariants built over another protocol's instances");
      mine.push_back(p);
    }
    return std::make_unique<CommNetInvariants>(mine);
  }

  // Inline content: a host copy on the sender, and a host bounce on a GPU
  // receiver. Read content: a host staging copy of a GPU source the NIC
  // cannot reach, and a host proxy for such a destination.
  uint64_t transfer_buffer_bytes(const std::any& options, const TensorTransfer& t) const override {
    if (t.is_dead || t.dtype == DataType::kString) return 0;
    const uint64_t bytes = t.shape.num_elements().value_or(0) * data_type_size(t.dtype);
    if (bytes <= options_of(options).eager_max_bytes) return bytes + (is_device(t.dst_kind) ? bytes : 0);
    return (is_nic_reachable(t.src_kind) ? 0 : bytes) + (is_nic_reachable(t.dst_kind) ? 0 : bytes);
  }

  const CollectiveProtocol* collective() const override { return nullptr; }

  std::string draw_swarm_scenario(SwarmDraw& draw) const override {
    return oneflow::draw_swarm_scenario(draw);
  }
};

}  // namespace

const ProtocolDescriptor& oneflow_commnet_protocol() {
  static const OneFlowCommNetProtocol protocol;
  return protocol;
}

CommNetOptions& options_of(std::any& options) {
  auto* o = std::any_cast<CommNetOptions>(&options);
  TW_ASSERT_MSG(o != nullptr, "options of another protocol");
  return *o;
}

const CommNetOptions& options_of(const std::any& options) {
  const auto* o = std::any_cast<CommNetOptions>(&options);
  TW_ASSERT_MSG(o != nullptr, "options of another protocol");
  return *o;
}

}  // namespace tensorwire::oneflow
