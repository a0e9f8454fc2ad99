#include "backend_verbs/host_stand_in_memory.h"

namespace tensorwire::verbs {

Result<Buffer> HostStandInMemory::allocate(MemoryKind kind, uint32_t device, uint64_t bytes) {
  if (!is_device(kind)) return host_.allocate(kind, device, bytes);
  ++stand_ins_;
  return host_.allocate(MemoryKind::kHostPinned, 0, bytes);
}

}  // namespace tensorwire::verbs
