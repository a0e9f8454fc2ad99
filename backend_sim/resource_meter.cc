#include "backend_sim/resource_meter.h"

#include <cmath>
#include <string>

#include "core/assert.h"

namespace tensorwire::sim {

ResourceMeter::ResourceMeter(const Cluster& cluster, const Fabric& fabric)
    : fabric_(fabric), nodes_(cluster.nodes), gpus_per_node_(cluster.gpus_per_node),
      bytes_(fabric.resource_count(), 0),
      copy_bytes_(size_t{cluster.nodes} * cluster.gpus_per_node, 0),
      copy_busy_ns_(size_t{cluster.nodes} * cluster.gpus_per_node, 0),
      cpu_busy_ns_(cluster.nodes, 0) {}

std::vector<ResourceUsage> ResourceMeter::usage() const {
  std::vector<ResourceUsage> out;
  out.reserve(size_t{nodes_} * (2 * fabric_.nics_per_node() + 1 + gpus_per_node_) +
              (fabric_.resource_count() - fabric_.first_link()));
  auto wire = [&](uint32_t resource) {
    TW_ASSERT_MSG(fabric_.capacity(resource) > 0, "the simulator validated every bandwidth");
    const double bytes = bytes_[resource];
    out.push_back(ResourceUsage{
        fabric_.resource_name(resource), fabric_.resource_kind(resource),
        fabric_.resource_node(resource),
        static_cast<TimeNs>(std::llround(bytes * 1e9 / fabric_.capacity(resource))),
        static_cast<uint64_t>(std::llround(bytes))});
  };
  for (uint32_t n = 0; n < nodes_; ++n) {
    for (uint32_t nic = 0; nic < fabric_.nics_per_node(); ++nic) {
      wire(fabric_.tx(n, nic));
      wire(fabric_.rx(n, nic));
    }
    for (uint32_t g = 0; g < gpus_per_node_; ++g) {
      const size_t engine = size_t{n} * gpus_per_node_ + g;
      out.push_back(ResourceUsage{"node" + std::to_string(n) + "/copy" + std::to_string(g),
                                  ResourceKind::kCopyEngine, n, copy_busy_ns_[engine],
                                  copy_bytes_[engine]});
    }
    out.push_back(
        ResourceUsage{"rank " + std::to_string(n) + "/cpu", ResourceKind::kCpu, n, cpu_busy_ns_[n], 0});
  }
  for (uint32_t link = fabric_.first_link(); link < fabric_.resource_count(); ++link) wire(link);
  return out;
}

}  // namespace tensorwire::sim
