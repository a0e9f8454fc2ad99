// The cluster a scenario describes, as every layer sees it: nodes with one NIC
// port each, host memory, GPUs behind PCIe with one copy engine each, NVLink
// between a node's GPUs where present, and the costs of registration and of
// CPU copies. One default per fact lives here; the scenario's [cluster]
// section overrides them, the simulator times work with them, and the
// collectives' topology routes over them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/clock.h"
#include "core/cluster_topology.h"
#include "core/jitter_model.h"

namespace tensorwire {

struct Cluster {
  uint32_t nodes = 2;  // one rank per node
  uint32_t gpus_per_node = 0;
  // gpu_direct[node][gpu]: can the NIC reach that GPU's memory? Empty means
  // "all true"; otherwise nodes x gpus_per_node entries.
  std::vector<std::vector<bool>> gpu_direct;

  double nic_bandwidth_bytes_per_s = 12.5e9;  // 100 Gbps, full duplex
  TimeNs nic_latency_ns = 1500;               // one-way, first byte
  // Each GPU's copy engine moves host<->device bytes over its PCIe link.
  double pcie_bandwidth_bytes_per_s = 12e9;
  TimeNs pcie_latency_ns = 1000;
  // GPU<->GPU copies on one node; 0: no NVLink, such a copy goes over PCIe.
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
  // Noise on message latencies and copies ([cluster.jitter]); off by default.
  JitterModel jitter;
  // How the NICs are cabled (core/cluster_topology.h); a star by default.
  ClusterTopology topology;

  bool has_gpu_direct(uint32_t node, uint32_t gpu) const {
    if (gpu_direct.empty()) return true;
    return node < gpu_direct.size() && gpu < gpu_direct[node].size() && gpu_direct[node][gpu];
  }
};

}  // namespace tensorwire
