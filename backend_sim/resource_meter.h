// What the simulated hardware did with its time, counted where the work is
// timed (the ports as flows settle, the copy engines as copies are queued,
// the CPU timelines as they are charged), whatever protocol drives it.
// A handful of additions per event: always on.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster.h"
#include "core/resource_usage.h"

namespace tensorwire::sim {

class ResourceMeter {
 public:
  explicit ResourceMeter(const Cluster& cluster);

  // `bytes` left src's transmit side for dst's receive side.
  void add_port_bytes(uint32_t src, uint32_t dst, double bytes) {
    tx_bytes_[src] += bytes;
    rx_bytes_[dst] += bytes;
  }
  void add_copy(uint32_t node, uint32_t gpu, uint64_t bytes, TimeNs busy_ns) {
    const size_t engine = size_t{node} * gpus_per_node_ + gpu;
    copy_bytes_[engine] += bytes;
    copy_busy_ns_[engine] += busy_ns;
  }
  void add_cpu(uint32_t rank, TimeNs busy_ns) { cpu_busy_ns_[rank] += busy_ns; }

  // Every resource of the cluster, node by node: its port's tx and rx side,
  // its copy engines, its rank's CPU. Busy time of a port side is the bytes
  // it moved at the port's full bandwidth (rounded to the nanosecond).
  std::vector<ResourceUsage> usage() const;

 private:
  uint32_t nodes_;
  uint32_t gpus_per_node_;
  double nic_bandwidth_bytes_per_s_;
  std::vector<double> tx_bytes_;  // per node: fluid flows move fractional bytes between settlements
  std::vector<double> rx_bytes_;
  std::vector<uint64_t> copy_bytes_;  // per node x GPU
  std::vector<TimeNs> copy_busy_ns_;
  std::vector<TimeNs> cpu_busy_ns_;  // per rank
};

}  // namespace tensorwire::sim
