#include "scenario/memory_place.h"

#include <charconv>
#include <string>
#include <system_error>

namespace tensorwire {

bool has_gpu_direct(const Cluster& cluster, RankId node, uint32_t gpu) {
  if (cluster.gpu_direct.empty()) return true;
  if (node >= cluster.gpu_direct.size() || gpu >= cluster.gpu_direct[node].size()) return false;
  return cluster.gpu_direct[node][gpu];
}

Result<MemoryPlace> resolve_memory_place(std::string_view spec,
                                         const Cluster& cluster, RankId node) {
  if (spec == "host" || spec == "host_pinned") return MemoryPlace{MemoryKind::kHostPinned, 0};
  if (spec == "host_pageable") return MemoryPlace{MemoryKind::kHostPageable, 0};
  const std::string quoted = "'" + std::string(spec) + "'";
  if (spec.substr(0, 3) == "gpu") {
    std::string_view index = spec.substr(3);
    uint32_t gpu = 0;
    auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), gpu);
    if (index.empty() || ec != std::errc() || end != index.data() + index.size()) {
      return Status(StatusCode::kInvalidArgument,
                    quoted + " is not a GPU: write gpu0, gpu1, ... (the GPU's index on its node)");
    }
    if (cluster.gpus_per_node == 0) {
      return Status(StatusCode::kInvalidArgument,
                    quoted + " names a GPU, but the cluster has none (cluster.gpus_per_node = 0)");
    }
    if (gpu >= cluster.gpus_per_node) {
      return Status(StatusCode::kInvalidArgument,
                    quoted + " is out of range: nodes have " +
                        (cluster.gpus_per_node == 1
                             ? std::string("1 GPU (gpu0)")
                             : std::to_string(cluster.gpus_per_node) + " GPUs (gpu0 to gpu" +
                                   std::to_string(cluster.gpus_per_node - 1) + ")"));
    }
    MemoryKind kind = has_gpu_direct(cluster, node, gpu) ? MemoryKind::kDeviceGpuDirect
                                                         : MemoryKind::kDeviceNoGpuDirect;
    return MemoryPlace{kind, gpu};
  }
  return Status(StatusCode::kInvalidArgument,
                "unknown memory " + quoted + " (use \"host\", \"host_pageable\" or \"gpuN\")");
}

}  // namespace tensorwire
