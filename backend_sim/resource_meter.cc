#include "backend_sim/resource_meter.h"

#include <cmath>
#include <string>

#include "core/assert.h"

namespace tensorwire::sim {

ResourceMeter::ResourceMeter(const Cluster& cluster)
    : nodes_(cluster.nodes), gpus_per_node_(cluster.gpus_per_node),
      nic_bandwidth_bytes_per_s_(cluster.nic_bandwidth_bytes_per_s), tx_bytes_(cluster.nodes, 0),
      rx_bytes_(cluster.nodes, 0),
      copy_bytes_(size_t{cluster.nodes} * cluster.gpus_per_node, 0),
      copy_busy_ns_(size_t{cluster.nodes} * cluster.gpus_per_node, 0),
      cpu_busy_ns_(cluster.nodes, 0) {}

std::vector<ResourceUsage> ResourceMeter::usage() const {
  TW_ASSERT_MSG(nic_bandwidth_bytes_per_s_ > 0, "the simulator validated the port bandwidth");
  std::vector<ResourceUsage> out;
  out.reserve(size_t{nodes_} * (3 + gpus_per_node_));
  auto port_side = [&](uint32_t node, double bytes, bool tx) {
    const auto whole_bytes = static_cast<uint64_t>(std::llround(bytes));
    out.push_back(ResourceUsage{
        "node" + std::to_string(node) + (tx ? "/nic tx" : "/nic rx"),
        tx ? ResourceKind::kNicSend : ResourceKind::kNicReceive, node,
        static_cast<TimeNs>(std::llround(bytes * 1e9 / nic_bandwidth_bytes_per_s_)), whole_bytes});
  };
  for (uint32_t n = 0; n < nodes_; ++n) {
    port_side(n, tx_bytes_[n], true);
    port_side(n, rx_bytes_[n], false);
    for (uint32_t g = 0; g < gpus_per_node_; ++g) {
      const size_t engine = size_t{n} * gpus_per_node_ + g;
      out.push_back(ResourceUsage{"node" + std::to_string(n) + "/copy" + std::to_string(g),
                                  ResourceKind::kCopyEngine, n, copy_busy_ns_[engine],
                                  copy_bytes_[engine]});
    }
    out.push_back(
        ResourceUsage{"rank " + std::to_string(n) + "/cpu", ResourceKind::kCpu, n, cpu_busy_ns_[n], 0});
  }
  return out;
}

}  // namespace tensorwire::sim
