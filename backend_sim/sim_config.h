// The simulated cluster: what a scenario's [cluster] section becomes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/clock.h"

namespace tensorwire::sim {

// One rank per node. A node has one NIC port (full duplex), host memory, and
// gpus_per_node GPUs, each behind PCIe with its own copy engine.
struct SimClusterConfig {
  uint32_t nodes = 2;
  uint32_t gpus_per_node = 0;
  // gpu_direct[node][gpu]: can the NIC reach that GPU's memory? Empty means
  // "all true"; otherwise nodes x gpus_per_node entries.
  std::vector<std::vector<bool>> gpu_direct;

  double nic_bandwidth_bytes_per_s = 12.5e9;  // 100 Gbps
  TimeNs nic_latency_ns = 1500;               // one-way, first byte
  double pcie_bandwidth_bytes_per_s = 12e9;
  TimeNs pcie_latency_ns = 1000;
  // GPU<->GPU copies on one node; 0: no NVLink, such a copy runs over PCIe.
  double nvlink_bandwidth_bytes_per_s = 0;
  TimeNs nvlink_latency_ns = 1000;
  double host_memcpy_bandwidth_bytes_per_s = 10e9;  // CPU copies (clone, serialize)
  TimeNs registration_base_ns = 5000;               // ibv_reg_mr fixed cost
  TimeNs registration_per_page_ns = 60;             // per 4 KiB page pinned
  uint32_t send_queue_depth = 256;
  // Receiver-not-ready: retry after this delay, up to rnr_retry_count times
  // (7 means forever, as in verbs), then kRnrRetryExceeded.
  TimeNs rnr_delay_ns = 10000;
  uint32_t rnr_retry_count = 7;
};

struct SimOptions {
  uint64_t seed = 1;
  bool payload = true;  // false: timing-only, buffers have no bytes
};

}  // namespace tensorwire::sim
