#include "core/memory.h"

namespace tensorwire {

const char* memory_kind_name(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHostPinned: return "host_pinned";
    case MemoryKind::kHostPageable: return "host_pageable";
    case MemoryKind::kDeviceGpuDirect: return "gpu_direct";
    case MemoryKind::kDeviceNoGpuDirect: return "gpu_no_direct";
  }
  return "unknown";
}

}  // namespace tensorwire
