// Where a tensor lives, as a scenario names it: "host" (pinned),
// "host_pageable", or "gpuN". Whether a GPU's memory is reachable by the NIC
// (GPUDirect) is a property of the cluster, so "gpu1" on a node becomes
// kDeviceGpuDirect or kDeviceNoGpuDirect from the cluster's gpu_direct table.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/cluster.h"
#include "core/memory.h"
#include "core/nic.h"
#include "core/status.h"

namespace tensorwire {

struct MemoryPlace {
  MemoryKind kind = MemoryKind::kHostPinned;
  uint32_t device = 0;
  friend bool operator==(const MemoryPlace&, const MemoryPlace&) = default;
};

// Can the NIC of `node` reach the memory of its GPU `gpu`? (Cluster:
// an empty gpu_direct table means every GPU can.)
bool has_gpu_direct(const Cluster& cluster, RankId node, uint32_t gpu);

// Resolves `spec` for a rank on `node`; an error says what was wrong.
Result<MemoryPlace> resolve_memory_place(std::string_view spec,
                                         const Cluster& cluster, RankId node);

}  // namespace tensorwire
