#include "core/protocols/realm_broadcast/broadcast_workload.h"

#include <charconv>
#include <map>
#include <optional>
#include <string>

#include "core/assert.h"

namespace tensorwire::collectives {
namespace {


constexpr uint64_t kMaxBroadcastBytes = 1ull << 40;    // 1 TiB, timing-only territory
constexpr uint64_t kMaxDestinations = 1u << 16;
constexpr uint64_t kMaxChunkBytes = 1ull << 31;        // one RDMA write
constexpr int64_t kMaxRadix = 1024;
constexpr int64_t kMaxInflightChunks = 1024;

std::optional<uint32_t> parse_uint(std::string_view text) {
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

BroadcastAlgorithm read_algorithm(const OptionReader& r) {
  const OptionReader::ValueType type = r.type_of("algorithm");
  if (type == OptionReader::ValueType::kAbsent) return BroadcastAlgorithm::kRadixTree;
  if (type == OptionReader::ValueType::kInteger) {
    return static_cast<BroadcastAlgorithm>(r.integer("algorithm", 0, kBroadcastAlgorithms - 1).value());
  }
  const std::string name = r.string("algorithm").value();
  if (name == "naive") return BroadcastAlgorithm::kNaive;
  if (name == "aggregation") return BroadcastAlgorithm::kAggregation;
  if (name == "radix_tree") return BroadcastAlgorithm::kRadixTree;
  if (name == "chain") return BroadcastAlgorithm::kChain;
  r.fail("algorithm", "unknown algorithm '" + name +
                          "' (use \"naive\" or 0, \"aggregation\" or 1, \"radix_tree\" or 2, "
                          "\"chain\" or 3)");
  TW_UNREACHABLE("OptionReader::fail throws");
}

// "all_gpus", "all_hosts" or "all": every such memory of the cluster.
std::vector<MemoryId> every_memory_named(const OptionReader& r, const Cluster& cluster) {
  const std::string which = r.string("destinations").value();
  const bool hosts = which == "all_hosts" || which == "all";
  const bool gpus = which == "all_gpus" || which == "all";
  if (!hosts && !gpus) {
    r.fail("destinations", "'" + which +
                               "' is not a list; use an array of \"nodeN/host\" / \"nodeN/gpuM\", "
                               "or \"all_gpus\", \"all_hosts\" or \"all\"");
  }
  std::vector<MemoryId> out;
  for (uint32_t n = 0; n < cluster.nodes; ++n) {
    if (hosts) out.push_back(MemoryId::host(n));
    for (uint32_t g = 0; gpus && g < cluster.gpus_per_node; ++g) out.push_back(MemoryId::gpu_of(n, g));
  }
  if (out.empty()) r.fail("destinations", "'" + which + "' names no memory in this cluster");
  return out;
}

std::vector<MemoryId> read_destinations(const OptionReader& r, const Cluster& cluster) {
  const OptionReader::ValueType type = r.type_of("destinations");
  if (type == OptionReader::ValueType::kAbsent) r.fail_missing("destinations");
  if (type == OptionReader::ValueType::kString) return every_memory_named(r, cluster);
  const std::vector<std::string> specs = r.strings("destinations", kMaxDestinations).value();
  if (specs.empty()) r.fail("destinations", "needs at least one destination");
  std::vector<MemoryId> out;
  out.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    Result<MemoryId> m = parse_memory_id(specs[i], cluster);
    if (!m) r.fail_item("destinations", i, m.status().message());
    out.push_back(*m);
  }
  TW_ASSERT(out.size() == specs.size());
  return out;
}

bool present(const OptionReader& r, std::string_view key) {
  return r.type_of(key) != OptionReader::ValueType::kAbsent;
}

uint64_t read_required_bytes(const OptionReader& r) {
  const std::optional<uint64_t> bytes = r.bytes("bytes", kMaxBroadcastBytes);
  if (!bytes) r.fail_missing("bytes");
  return *bytes;
}

BroadcastOptions read_options(const OptionReader& r) {
  BroadcastOptions o;
  o.algorithm = read_algorithm(r);
  o.radix_inter = static_cast<uint32_t>(r.integer("radix_inter", 1, kMaxRadix).value_or(o.radix_inter));
  o.radix_intra = static_cast<uint32_t>(r.integer("radix_intra", 0, kMaxRadix).value_or(o.radix_intra));
  o.ib_buffer_max_bytes = r.bytes("ib_buffer_size", kMaxChunkBytes).value_or(o.ib_buffer_max_bytes);
  o.ib_pool_bytes = r.bytes("ib_pool_size", kMaxBroadcastBytes).value_or(o.ib_pool_bytes);
  o.min_chunk_bytes = r.bytes("min_chunk", kMaxChunkBytes).value_or(o.min_chunk_bytes);
  o.max_chunk_bytes = r.bytes("max_chunk", kMaxChunkBytes).value_or(o.max_chunk_bytes);
  o.max_inflight_chunks = static_cast<uint32_t>(
      r.integer("max_inflight_chunks", 1, kMaxInflightChunks).value_or(o.max_inflight_chunks));
  o.registration_window_bytes =
      r.bytes("registration_window", kMaxBroadcastBytes).value_or(o.registration_window_bytes);
  if (std::string why = validate_broadcast_options(o); !why.empty()) {
    // Name the key the message starts with.
    const std::string key = why.substr(0, why.find(' '));
    r.fail(present(r, key) ? key : "kind", why);
  }
  return o;
}

// Payload mode holds every instance's bytes and the IB pools in memory.
std::map<uint32_t, uint64_t> payload_bytes_by_node(const BroadcastWorkload& w,
                                                   const TransferGraph& plan) {
  std::map<uint32_t, uint64_t> per_node;
  per_node[w.source.node] += w.bytes;
  for (const MemoryId& d : w.destinations) per_node[d.node] += w.bytes;
  for (const auto& [memory, ib_bytes] : plan.ib_bytes_by_memory()) per_node[memory.node] += ib_bytes;
  return per_node;
}

void check_payload_memory(const OptionReader& r, const BroadcastWorkload& w,
                          const TransferGraph& plan, uint64_t max_bytes_per_node) {
  for (const auto& [node, bytes] : payload_bytes_by_node(w, plan)) {
    if (bytes <= max_bytes_per_node) continue;
    r.fail("bytes", "node" + std::to_string(node) + " would hold " + std::to_string(bytes >> 20) +
                        " MiB of instances and IB buffers; payload mode allows " +
                        std::to_string(max_bytes_per_node >> 30) +
                        " GiB per node (use [run] mode = \"timing\")");
  }
}

}  // namespace

Result<MemoryId> parse_memory_id(std::string_view spec, const Cluster& cluster) {
  const auto bad = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument, "'" + std::string(spec) + "': " + why);
  };
  const size_t slash = spec.find('/');
  if (spec.substr(0, 4) != "node" || slash == std::string_view::npos) {
    return bad("a memory is \"nodeN/host\" or \"nodeN/gpuM\"");
  }
  std::optional<uint32_t> node = parse_uint(spec.substr(4, slash - 4));
  if (!node) return bad("node number is not a whole number");
  if (*node >= cluster.nodes) {
    return bad("the cluster has nodes 0 to " + std::to_string(cluster.nodes - 1));
  }
  const std::string_view memory = spec.substr(slash + 1);
  if (memory == "host") return MemoryId::host(*node);
  if (memory.substr(0, 3) != "gpu") return bad("memory is \"host\" or \"gpuM\"");
  std::optional<uint32_t> gpu = parse_uint(memory.substr(3));
  if (!gpu) return bad("GPU number is not a whole number");
  if (*gpu >= cluster.gpus_per_node) {
    return bad(cluster.gpus_per_node == 0
                   ? std::string("the cluster's nodes have no GPUs")
                   : "a node has GPUs 0 to " + std::to_string(cluster.gpus_per_node - 1));
  }
  return MemoryId::gpu_of(*node, *gpu);
}

std::vector<std::string_view> broadcast_workload_keys() {
  return {"bytes",        "source",     "destinations",   "algorithm",
          "radix_inter",  "radix_intra", "ib_buffer_size", "ib_pool_size", "registration_window",
          "min_chunk",    "max_chunk",  "max_inflight_chunks"};
}

BroadcastWorkload read_broadcast_workload(const OptionReader& r, const Cluster& cluster,
                                          const CollectiveWorkloadLimits& limits) {
  BroadcastWorkload w;
  w.bytes = read_required_bytes(r);
  const std::optional<std::string> source = r.string("source");
  if (!source) r.fail_missing("source");
  Result<MemoryId> src = parse_memory_id(*source, cluster);
  if (!src) r.fail("source", src.status().message());
  w.source = *src;
  w.destinations = read_destinations(r, cluster);
  w.options = read_options(r);
  // Plan it now, so that a plan the pools cannot hold is an error in the file,
  // and payload mode knows the IB memory it would hold.
  ClusterTopology topology(cluster);
  Result<TransferGraph> plan = plan_broadcast(topology, w.source, w.destinations, w.bytes, w.options);
  if (!plan) r.fail(present(r, "ib_pool_size") ? "ib_pool_size" : "kind", plan.status().message());
  if (limits.payload) check_payload_memory(r, w, *plan, limits.max_payload_bytes_per_node);
  return w;
}

std::map<uint32_t, uint64_t> broadcast_payload_bytes_by_node(const BroadcastWorkload& w,
                                                             const Cluster& cluster) {
  // Planned again: the workload keeps what was asked, not the plan. The
  // loader planned it already, so this plan succeeds.
  ClusterTopology topology(cluster);
  Result<TransferGraph> plan = plan_broadcast(topology, w.source, w.destinations, w.bytes, w.options);
  TW_ASSERT_MSG(plan.is_ok(), "a workload the loader read can be planned");
  return payload_bytes_by_node(w, *plan);
}

const BroadcastWorkload& workload_of(const std::any& workload) {
  const auto* w = std::any_cast<BroadcastWorkload>(&workload);
  TW_ASSERT_MSG(w != nullptr, "the workload of another protocol");
  return *w;
}

}  // namespace tensorwire::collectives
