// Memory as the protocols see it: buffers in a memory kind, registration
// rights, and the per-rank MemorySpace that allocates them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/status.h"

namespace tensorwire {

// Where a buffer lives. GPUDirect is a property of the GPU (can the HCA reach its
// memory directly?), so it is part of the kind a buffer is allocated in.
enum class MemoryKind : uint8_t {
  kHostPinned,        // page-locked host memory: DMA-able, registrable
  kHostPageable,      // ordinary host memory: registrable (pinned on registration)
  kDeviceGpuDirect,   // GPU memory the HCA can read/write (GPUDirect RDMA)
  kDeviceNoGpuDirect, // GPU memory the HCA cannot reach: stage through a host proxy
};

const char* memory_kind_name(MemoryKind kind);
inline bool is_device(MemoryKind k) {
  return k == MemoryKind::kDeviceGpuDirect || k == MemoryKind::kDeviceNoGpuDirect;
}
inline bool is_host(MemoryKind k) { return !is_device(k); }
// Can the NIC DMA to/from memory of this kind?
inline bool is_nic_reachable(MemoryKind k) { return k != MemoryKind::kDeviceNoGpuDirect; }

// A contiguous range of one rank's memory: an allocation, or part of one. Addresses are opaque
// 64-bit values: real virtual addresses on verbs, deterministic simulated ones
// in the simulator. Never dereference `addr`; use MemorySpace.
struct Buffer {
  uint64_t addr = 0;
  uint64_t length = 0;
  MemoryKind kind = MemoryKind::kHostPinned;
  uint32_t device = 0;  // GPU index on the node for device kinds, 0 for host

  bool contains(uint64_t a, uint64_t len) const {
    return a >= addr && len <= length && a - addr <= length - len;
  }
  friend bool operator==(const Buffer&, const Buffer&) = default;
};

// Registration rights (ibv_access_flags subset). Register with the least the role needs.
enum class Access : uint32_t {
  kNone = 0,
  kLocalWrite = 1u << 0,
  kRemoteWrite = 1u << 1,
  kRemoteRead = 1u << 2,
};
constexpr Access operator|(Access a, Access b) {
  return static_cast<Access>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}
constexpr Access operator&(Access a, Access b) {
  return static_cast<Access>(static_cast<uint32_t>(a) & static_cast<uint32_t>(b));
}
constexpr bool has_access(Access set, Access wanted) { return (set & wanted) == wanted; }

// A registered memory region (ibv_mr): what a work request names by lkey and a
// peer names by rkey.
struct MemoryRegion {
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  Access access = Access::kNone;
  MemoryKind kind = MemoryKind::kHostPinned;
  uint32_t device = 0;

  bool contains(uint64_t a, uint64_t len) const {
    return a >= addr && len <= length && a - addr <= length - len;
  }
  friend bool operator==(const MemoryRegion&, const MemoryRegion&) = default;
};

// One rank's memory: allocation plus byte access. Owned by the backend.
class MemorySpace {
 public:
  virtual ~MemorySpace() = default;

  // Allocate `bytes` (0 allowed: a zero-length buffer with a unique address).
  virtual Result<Buffer> allocate(MemoryKind kind, uint32_t device, uint64_t bytes) = 0;
  virtual void free(const Buffer& buffer) = 0;

  // False in the simulator's timing-only mode: buffers have addresses but no bytes.
  virtual bool holds_payload() const = 0;

  // CPU view of host memory (empty span for device memory or without payload).
  // This is how a protocol serializes into / parses out of host buffers.
  virtual std::span<std::byte> host_view(const Buffer& buffer) = 0;

  // A CPU memcpy between two host buffers. Costs CPU time in the simulator and
  // is counted as bytes copied by the CPU. Bounds are checked.
  virtual Status cpu_copy(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                          uint64_t src_offset, uint64_t bytes) = 0;

  // Out-of-band access for workloads and tests (fill a source tensor, verify a
  // result), any memory kind. Free of simulated cost; not for protocols.
  virtual Status write_bytes(const Buffer& buffer, uint64_t offset,
                             std::span<const std::byte> data) = 0;
  virtual Status read_bytes(const Buffer& buffer, uint64_t offset, std::span<std::byte> out) = 0;
};

}  // namespace tensorwire
