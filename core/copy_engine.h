// The asynchronous copy engine for host<->device copies (cudaMemcpyAsync on a
// stream on real hardware, a PCIe model in the simulator).
#pragma once

#include <cstdint>
#include <functional>

#include "core/memory.h"
#include "core/status.h"

namespace tensorwire {

using CopyDone = std::function<void(Status)>;

class CopyEngine {
 public:
  virtual ~CopyEngine() = default;
  // Copy `bytes` from src+src_offset to dst+dst_offset; any pair of kinds
  // (host to host too, as cudaMemcpyAsync allows: a collective's local stage
  // may copy between host buffers). `done` runs on the rank's progress loop.
  // A non-ok return means nothing was submitted and `done` will not run.
  virtual Status submit(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                        uint64_t src_offset, uint64_t bytes, CopyDone done) = 0;
};

}  // namespace tensorwire
