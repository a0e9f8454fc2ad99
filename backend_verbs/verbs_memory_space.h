// One rank's MemorySpace on a real machine: host memory, and GPU memory
// through the CUDA runtime where the build has CUDA (backend_verbs/cuda_memory.h).
//
// Host allocations (pinned or pageable) are page-aligned, zero-filled blocks
// of the process's own memory: ibv_reg_mr pins whatever it registers, so a
// "pinned" buffer needs no mlock of its own, and page alignment keeps one
// buffer's registration from pinning a neighbour's page. A zero-length buffer
// still gets a page, so its address is unique, as the contract asks.
// GPU kinds (with GPUDirect or not: which one is the scenario's word for the
// GPU) are cudaMalloc'ed on that GPU; their address is the device pointer,
// host_view() and cpu_copy() refuse them (the CPU cannot touch them), and
// write_bytes/read_bytes go through cudaMemcpy. Without CUDA, or without a
// GPU, allocating one answers the CUDA call's error.
//
// Every byte access (host_view, cpu_copy, read_bytes, write_bytes) is checked
// against a live allocation; a buffer that is not inside one is an error, never
// a read or write out of bounds. Not thread-safe: the rank's progress loop owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>

#include "core/memory.h"
#include "core/status.h"

namespace tensorwire::verbs {

struct HostMemoryCounters {
  uint64_t allocations = 0;
  uint64_t allocated_bytes = 0;  // currently live
  uint64_t cpu_copies = 0;
  uint64_t cpu_copy_bytes = 0;
};

class VerbsMemorySpace final : public MemorySpace {
 public:
  VerbsMemorySpace();
  ~VerbsMemorySpace() override;
  VerbsMemorySpace(const VerbsMemorySpace&) = delete;
  VerbsMemorySpace& operator=(const VerbsMemorySpace&) = delete;

  Result<Buffer> allocate(MemoryKind kind, uint32_t device, uint64_t bytes) override;
  // Freeing a buffer that is not a live allocation's start is ignored (and
  // counted in stray_frees()): a double free must not corrupt the heap.
  void free(const Buffer& buffer) override;
  bool holds_payload() const override { return true; }
  std::span<std::byte> host_view(const Buffer& buffer) override;
  Status cpu_copy(const Buffer& dst, uint64_t dst_offset, const Buffer& src, uint64_t src_offset,
                  uint64_t bytes) override;
  Status write_bytes(const Buffer& buffer, uint64_t offset,
                     std::span<const std::byte> data) override;
  Status read_bytes(const Buffer& buffer, uint64_t offset, std::span<std::byte> out) override;

  // The bytes of [addr, addr + length) when they lie inside one live host
  // allocation; an error naming the range otherwise. For the copy engine.
  Result<std::byte*> locate(uint64_t addr, uint64_t length, const char* what) const;
  // OK when buffer[offset, offset + length) lies in one live GPU allocation;
  // an error naming the range otherwise. For the copy engine.
  Status check_device_range(const Buffer& buffer, uint64_t offset, uint64_t length,
                            const char* what) const;

  const HostMemoryCounters& counters() const { return counters_; }
  uint64_t live_allocations() const { return blocks_.size() + device_blocks_.size(); }
  uint64_t stray_frees() const { return stray_frees_; }
  size_t page_bytes() const { return page_bytes_; }

 private:
  struct Block {
    std::byte* data = nullptr;
    uint64_t length = 0;  // what was asked for (the block may be longer)
    MemoryKind kind = MemoryKind::kHostPinned;
  };
  struct DeviceBlock {
    uint64_t length = 0;
    MemoryKind kind = MemoryKind::kDeviceGpuDirect;
    uint32_t device = 0;
  };

  // The bytes of buffer[offset, offset + length), checked.
  Result<std::byte*> range(const Buffer& buffer, uint64_t offset, uint64_t length,
                           const char* what) const;

  size_t page_bytes_;
  std::map<uint64_t, Block> blocks_;  // by address
  std::map<uint64_t, DeviceBlock> device_blocks_;  // by device address
  HostMemoryCounters counters_;
  uint64_t stray_frees_ = 0;
};

}  // namespace tensorwire::verbs
