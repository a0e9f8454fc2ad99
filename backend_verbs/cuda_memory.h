// GPU memory for the verbs backend, through the CUDA runtime: device
// allocations, synchronous copies for filling and checking tensors, a
// dmabuf handle of a device range for GPUDirect registration
// (ibv_reg_dmabuf_mr), and an asynchronous copy stream for the host-proxy
// path of GPUs without GPUDirect (cudaMemcpyAsync, completion seen by
// polling an event from the rank's progress loop).
//
// Built two ways (meson option `cuda`): with the toolkit, cuda_memory.cc,
// linked against the static CUDA runtime so that binaries start on machines
// without the NVIDIA driver and ask for a GPU only when used; without it,
// cuda_memory_absent.cc, where every call answers kUnavailable saying so.
// The driver API (cuMemGetHandleForAddressRange) is reached through
// cudaGetDriverEntryPointByVersion, never linked, for the same reason.
// Every error names the CUDA call and its message.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"

namespace tensorwire::verbs::cuda {

// Whether this build has CUDA support at all.
bool built();

// How many GPUs the CUDA runtime sees; an error (no driver, no device, a
// build without CUDA) names why. Tests skip on it.
Result<uint32_t> device_count();

// Device memory on GPU `device`: `bytes` rounded up to a whole number of
// host pages, so that any page-aligned range inside it can be exported as a
// dmabuf. The address is the device pointer.
Result<uint64_t> allocate(uint32_t device, uint64_t bytes);
Status release(uint32_t device, uint64_t addr);

// A synchronous copy of `bytes` between any two of host memory and device
// memory (the runtime tells them apart by address: unified addressing).
Status copy(uint64_t dst, uint64_t src, uint64_t bytes);

// A dmabuf file descriptor covering the host pages around [addr, addr +
// length) of a device allocation, and where addr lies in it. The caller owns
// the descriptor (close it once the memory region is registered).
struct DmaBufRange {
  int fd = -1;
  uint64_t offset = 0;  // of addr from the start of the exported range
};
Result<DmaBufRange> export_dmabuf(uint64_t addr, uint64_t length);

// One CUDA stream on one GPU; copies run on it in submission order, and
// poll() reports the tokens of those that finished, in order.
class CopyStream {
 public:
  static Result<std::unique_ptr<CopyStream>> create(uint32_t device);
  virtual ~CopyStream() = default;
  virtual Status submit(uint64_t dst, uint64_t src, uint64_t bytes, uint64_t token) = 0;
  // Finished copies, in submission order; an error is a failed copy (the
  // stream cannot go on).
  virtual Result<std::vector<uint64_t>> poll() = 0;
  virtual size_t pending() const = 0;
};

}  // namespace tensorwire::verbs::cuda
