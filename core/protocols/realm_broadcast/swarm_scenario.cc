#include "core/protocols/realm_broadcast/swarm_scenario.h"

#include <sstream>
#include <string_view>

#include "core/assert.h"

namespace tensorwire::collectives {
namespace {

constexpr std::string_view kAlgorithms[] = {"naive", "aggregation", "radix_tree", "chain"};
constexpr uint64_t kMinChunks[] = {256, 1024, 4096};
constexpr uint32_t kMaxNodes = 4;
constexpr uint32_t kMaxGpus = 2;

std::string draw_memory(SwarmDraw& d, uint32_t nodes, uint32_t gpus) {
  const auto node = d.index_below(nodes);
  const size_t memory = d.index_below(1 + size_t{gpus});
  return "node" + std::to_string(node) + (memory == 0 ? "/host" : "/gpu" + std::to_string(memory - 1));
}

void write_cluster(SwarmDraw& d, uint32_t nodes, uint32_t gpus, std::ostream& t) {
  t << "[cluster]\nnodes = " << nodes << "\ngpus_per_node = " << gpus << "\ngpu_direct = ";
  // As many picks whatever the cluster's size: a smaller one leaves later draws as they were.
  const bool per_gpu = d.one_in(2) && gpus > 0;
  bool direct[kMaxNodes][kMaxGpus];
  for (auto& node : direct) {
    for (bool& b : node) b = d.one_in(2);
  }
  if (per_gpu) {
    // Per GPU: paths through host IB buffers beside direct ones.
    t << "[";
    for (uint32_t n = 0; n < nodes; ++n) {
      t << (n > 0 ? ", [" : "[");
      for (uint32_t g = 0; g < gpus; ++g) t << (g > 0 ? ", " : "") << (direct[n][g] ? "true" : "false");
      t << "]";
    }
    t << "]\n";
  } else {
    t << (direct[0][0] ? "true" : "false") << "\n";
  }
  if (d.one_in(3) && gpus > 1) t << "nvlink_bandwidth = \"300GB/s\"\n";
}

void write_destinations(SwarmDraw& d, uint32_t nodes, uint32_t gpus, std::ostream& t) {
  if (d.one_in(4)) {
    const size_t which = d.index_below(gpus > 0 ? 3 : 2);
    t << "destinations = \"" << (which == 0 ? "all" : which == 1 ? "all_hosts" : "all_gpus")
      << "\"\n";
    return;
  }
  const uint64_t count = d.up_to_sized(1, 5);
  TW_ASSERT(count >= 1);
  t << "destinations = [";
  for (uint64_t i = 0; i < count; ++i) {
    t << (i > 0 ? ", " : "") << "\"" << draw_memory(d, nodes, gpus) << "\"";
  }
  t << "]\n";
}

// A message of a few bytes, any length, or a whole number of chunks give or
// take one byte (a ring's end, a last short chunk).
uint64_t draw_bytes(SwarmDraw& d, uint64_t min_chunk) {
  switch (d.index_below(3)) {
    case 0: return d.between(0, 16);
    case 1: return d.up_to_sized(1, 48 * 1024);
    default: break;
  }
  const uint64_t chunks = d.up_to_sized(1, 8);
  return chunks * min_chunk + d.between(0, 2) - 1;
}

void write_chunks(SwarmDraw& d, std::ostream& t) {
  const uint64_t min_chunk = kMinChunks[d.index_below(std::size(kMinChunks))];
  const uint64_t bytes = draw_bytes(d, min_chunk);
  t << "bytes = " << bytes << "\nmin_chunk = " << min_chunk
    << "\nmax_chunk = " << min_chunk * d.between(1, 4)
    << "\nib_buffer_size = " << min_chunk * d.between(1, 4)
    << "\nmax_inflight_chunks = " << d.between(1, 4) << "\n";
  // A pool of a few chunks per memory: IB buffers shrink to fit it.
  if (d.one_in(4)) t << "ib_pool_size = " << min_chunk * d.between(8, 24) << "\n";
}

std::string draw_scenario(SwarmDraw& d) {
  const auto nodes = static_cast<uint32_t>(d.up_to_sized(2, kMaxNodes));
  const auto gpus = static_cast<uint32_t>(d.between(0, kMaxGpus));
  std::ostringstream t;
  t << "seed = " << d.between(1, 1u << 30) << "\n";
  write_cluster(d, nodes, gpus, t);
  t << "[protocol]\nname = \"realm_collective_broadcast\"\n"
    << "[workload]\nkind = \"broadcast\"\nsource = \"" << draw_memory(d, nodes, gpus) << "\"\n";
  t << "algorithm = \"" << kAlgorithms[d.index_below(std::size(kAlgorithms))]
    << "\"\nradix_inter = " << d.between(1, 3) << "\nradix_intra = " << d.between(0, 3) << "\n";
  write_chunks(d, t);
  // Last: a shorter list leaves every other draw as it was (shrinking).
  write_destinations(d, nodes, gpus, t);
  // Drawn after every older draw, so that the scenarios drawn before windows
  // existed keep their shape. A window of a few chunks: instances larger than
  // it are registered piece by piece.
  if (d.one_in(3)) t << "registration_window = " << 4096 * d.between(1, 12) << "\n";
  return t.str();
}

}  // namespace

std::string draw_swarm_scenario(SwarmDraw& d) { return draw_scenario(d); }

}  // namespace tensorwire::collectives
