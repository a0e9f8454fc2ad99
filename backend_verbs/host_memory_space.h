// One rank's MemorySpace on a real machine: host memory only, for now.
//
// Host allocations (pinned or pageable) are page-aligned, zero-filled blocks
// of the process's own memory: ibv_reg_mr pins whatever it registers, so a
// "pinned" buffer needs no mlock of its own, and page alignment keeps one
// buffer's registration from pinning a neighbour's page. A zero-length buffer
// still gets a page, so its address is unique, as the contract asks.
// GPU memory kinds answer kUnavailable naming the kind and the device: CUDA
// memory is a later part of the verbs backend.
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

class HostMemorySpace final : public MemorySpace {
 public:
  HostMemorySpace();
  ~HostMemorySpace() override;
  HostMemorySpace(const HostMemorySpace&) = delete;
  HostMemorySpace& operator=(const HostMemorySpace&) = delete;

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

  const HostMemoryCounters& counters() const { return counters_; }
  uint64_t live_allocations() const { return blocks_.size(); }
  uint64_t stray_frees() const { return stray_frees_; }
  size_t page_bytes() const { return page_bytes_; }

 private:
  struct Block {
    std::byte* data = nullptr;
    uint64_t length = 0;  // what was asked for (the block may be longer)
    MemoryKind kind = MemoryKind::kHostPinned;
  };
  // The bytes of buffer[offset, offset + length), checked.
  Result<std::byte*> range(const Buffer& buffer, uint64_t offset, uint64_t length,
                           const char* what) const;

  size_t page_bytes_;
  std::map<uint64_t, Block> blocks_;  // by address
  HostMemoryCounters counters_;
  uint64_t stray_frees_ = 0;
};

}  // namespace tensorwire::verbs
