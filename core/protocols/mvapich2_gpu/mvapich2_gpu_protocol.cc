#include "core/protocols/mvapich2_gpu/mvapich2_gpu_protocol.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "core/assert.h"
#include "core/protocols/mvapich2_gpu/mv2_invariants.h"
#include "core/protocols/mvapich2_gpu/mv2_rendezvous.h"
#include "core/protocols/mvapich2_gpu/swarm_scenario.h"

namespace tensorwire::mvapich2 {
namespace {

Mv2Options read_mv2_options(const OptionReader& reader) {
  Mv2Options o;
  if (std::optional<std::string> s = reader.string("staging")) {
    if (!staging_from_name(*s, o.staging)) {
      reader.fail("staging", "'" + *s + "' is not a staging: \"naive\" or \"pipelined\"");
    }
  }
  o.eager_max_bytes = reader.bytes("eager_max_bytes", kMaxEagerBytes).value_or(o.eager_max_bytes);
  o.block_bytes = reader.bytes("block_bytes", kMaxBlockBytes).value_or(o.block_bytes);
  if (o.block_bytes < kMinBlockBytes) {
    reader.fail("block_bytes", "must be at least " + std::to_string(kMinBlockBytes) + " bytes");
  }
  o.vbuf_count = static_cast<uint32_t>(
      reader.integer("vbuf_count", 1, kMaxVbufCount).value_or(o.vbuf_count));
  o.receive_pool_size = static_cast<uint32_t>(
      reader.integer("receive_pool_size", kMinReceivePoolSize, kMaxReceivePoolSize)
          .value_or(o.receive_pool_size));
  o.channels = read_channel_scope(reader, o.channels);
  return o;
}

class Mvapich2GpuProtocol final : public ProtocolDescriptor {
 public:
  std::string_view name() const override { return "mvapich2_gpu"; }
  std::string_view summary() const override {
    return "MVAPICH2-GPU: eager below a threshold, else RTS/CTS rendezvous with RDMA writes and a "
           "FIN per block, GPU buffers staged through host vbufs in a pipeline";
  }
  ProtocolShape shape() const override { return ProtocolShape::kPointToPoint; }
  std::vector<std::string_view> workload_kinds() const override {
    return {"tensors", "parameter_server"};
  }
  std::vector<std::string_view> option_keys() const override {
    return {"staging", "eager_max_bytes", "block_bytes", "vbuf_count", "receive_pool_size",
            kChannelsOptionKey};
  }
  std::any default_options() const override { return Mv2Options{}; }
  std::any read_options(const OptionReader& reader) const override {
    return read_mv2_options(reader);
  }

  Coverage coverage(const std::any& options) const override {
    return mv2_declared_coverage(options_of(options));
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
    return std::make_unique<Mv2Rendezvous>(env, options_of(options));
  }

  std::unique_ptr<ProtocolInvariants> make_invariants(
      std::vector<const Rendezvous*> ranks) const override {
    std::vector<const Mv2Rendezvous*> mine;
    mine.reserve(ranks.size());
    for (const Rendezvous* r : ranks) {
      const auto* p = dynamic_cast<const Mv2Rendezvous*>(r);
      TW_ASSERT_MSG(p != nullptr, "invariants built over another protocol's instances");
      mine.push_back(p);
    }
    return std::make_unique<Mv2Invariants>(mine);
  }

  // Eager: a host copy on the sender and a host bounce on a GPU receiver.
  // Rendezvous: host staging on each side the NIC cannot reach, the whole
  // buffer when naive, at most the vbuf pool when pipelined.
  uint64_t transfer_buffer_bytes(const std::any& options, const TensorTransfer& t) const override {
    if (t.is_dead || t.dtype == DataType::kString) return 0;
    const Mv2Options& o = options_of(options);
    const uint64_t bytes = t.shape.num_elements().value_or(0) * data_type_size(t.dtype);
    if (bytes <= o.eager_max_bytes) return bytes + (is_device(t.dst_kind) ? bytes : 0);
    const uint64_t staged =
        o.staging == Staging::kNaive ? bytes : std::min(bytes, o.block_bytes * o.vbuf_count);
    return (is_nic_reachable(t.src_kind) ? 0 : staged) + (is_nic_reachable(t.dst_kind) ? 0 : staged);
  }

  const CollectiveProtocol* collective() const override { return nullptr; }

  std::string draw_swarm_scenario(SwarmDraw& draw) const override {
    return mvapich2::draw_swarm_scenario(draw);
  }
};

}  // namespace

const ProtocolDescriptor& mvapich2_gpu_protocol() {
  static const Mvapich2GpuProtocol protocol;
  return protocol;
}

Mv2Options& options_of(std::any& options) {
  auto* o = std::any_cast<Mv2Options>(&options);
  TW_ASSERT_MSG(o != nullptr, "options of another protocol");
  return *o;
}

const Mv2Options& options_of(const std::any& options) {
  const auto* o = std::any_cast<Mv2Options>(&options);
  TW_ASSERT_MSG(o != nullptr, "options of another protocol");
  return *o;
}

}  // namespace tensorwire::mvapich2
