// What the simulated hardware did with its time, counted where the work is
// timed (the fabric's resources as flows settle, the copy engines as copies
// are queued, the CPU timelines as they are charged), whatever protocol drives
// it. A handful of additions per event: always on.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend_sim/fabric.h"
#include "core/cluster.h"
#include "core/resource_usage.h"

namespace tensorwire::sim {

class ResourceMeter {
 public:
  ResourceMeter(const Cluster& cluster, const Fabric& fabric);

  // `bytes` crossed every resource of a flow's route (Fabric numbering).
  void add_route_bytes(std::span<const uint32_t> resources, double bytes) {
    for (uint32_t r : resources) bytes_[r] += bytes;
  }
  void add_copy(uint32_t node, uint32_t gpu, uint64_t bytes, TimeNs busy_ns) {
    const size_t engine = size_t{node} * gpus_per_node_ + gpu;
    copy_bytes_[engine] += bytes;
    copy_busy_ns_[engine] += busy_ns;
  }
  void add_cpu(uint32_t rank, TimeNs busy_ns) { cpu_busy_ns_[rank] += busy_ns; }

  // Every resource of the cluster, node by node: its NICs' tx and rx sides,
  // its copy engines, its rank's CPU; then the fabric's links (none in a
  // star). Busy time of a NIC side or link is the bytes it moved at its full
  // bandwidth (rounded to the nanosecond).
  std::vector<ResourceUsage> usage() const;

 private:
  const Fabric& fabric_;
  uint32_t nodes_;
  uint32_t gpus_per_node_;
  std::vector<double> bytes_;  // per fabric resource: fluid flows move fractional bytes
  std::vector<uint64_t> copy_bytes_;  // per node x GPU
  std::vector<TimeNs> copy_busy_ns_;
  std::vector<TimeNs> cpu_busy_ns_;  // per rank
};

}  // namespace tensorwire::sim
