// A rank's memory with host memory standing in for its GPUs (`--gpu-as-host`):
// a GPU allocation becomes a pinned host one, everything else goes to the
// memory underneath. For a protocol that places buffers in GPU memory itself
// (a collective's instances and IB buffers, by the cluster's topology), where
// a point-to-point scenario's tensors can be moved to host memory before the
// run instead. The buffers it gives are host buffers through and through
// (their kind says so), so the NIC registers and the copy engine copies them
// as host memory: the run checks the protocol, not GPUDirect.
#pragma once

#include "core/memory.h"

namespace tensorwire::verbs {

class HostStandInMemory final : public MemorySpace {
 public:
  explicit HostStandInMemory(MemorySpace& host) : host_(host) {}

  Result<Buffer> allocate(MemoryKind kind, uint32_t device, uint64_t bytes) override;
  void free(const Buffer& buffer) override { host_.free(buffer); }
  bool holds_payload() const override { return host_.holds_payload(); }
  std::span<std::byte> host_view(const Buffer& buffer) override { return host_.host_view(buffer); }
  Status cpu_copy(const Buffer& dst, uint64_t dst_offset, const Buffer& src, uint64_t src_offset,
                  uint64_t bytes) override {
    return host_.cpu_copy(dst, dst_offset, src, src_offset, bytes);
  }
  Status write_bytes(const Buffer& buffer, uint64_t offset,
                     std::span<const std::byte> data) override {
    return host_.write_bytes(buffer, offset, data);
  }
  Status read_bytes(const Buffer& buffer, uint64_t offset, std::span<std::byte> out) override {
    return host_.read_bytes(buffer, offset, out);
  }

  // GPU allocations given as host memory so far.
  uint64_t stand_ins() const { return stand_ins_; }

 private:
  MemorySpace& host_;
  uint64_t stand_ins_ = 0;
};

}  // namespace tensorwire::verbs
