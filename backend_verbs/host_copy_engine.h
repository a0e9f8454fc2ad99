// The CopyEngine of a rank without CUDA: host-to-host copies only, done with
// memcpy by the rank's progress loop (progress()), not inside submit(), so a
// copy completes asynchronously as cudaMemcpyAsync's would and `done` runs on
// the progress loop like every other completion. The source must stay valid
// until `done` runs, as for cudaMemcpyAsync.
//
// Ranges are checked at submit against the rank's HostMemorySpace: a range
// outside a live allocation, or a GPU memory kind (CUDA is a later part),
// answers an error and nothing is submitted.
#pragma once

#include <cstdint>
#include <deque>

#include "backend_verbs/host_memory_space.h"
#include "core/copy_engine.h"

namespace tensorwire::verbs {

struct CopyEngineCounters {
  uint64_t copies = 0;
  uint64_t bytes = 0;
};

class HostCopyEngine final : public CopyEngine {
 public:
  explicit HostCopyEngine(HostMemorySpace& memory) : memory_(memory) {}

  Status submit(const Buffer& dst, uint64_t dst_offset, const Buffer& src, uint64_t src_offset,
                uint64_t bytes, CopyDone done) override;

  // Performs every copy submitted so far, in order, and runs their `done`s
  // (copies submitted from a `done` wait for the next call). Returns how many.
  uint32_t progress();
  size_t pending() const { return queue_.size(); }
  const CopyEngineCounters& counters() const { return counters_; }

 private:
  struct Copy {
    uint64_t dst_addr = 0;
    uint64_t src_addr = 0;
    uint64_t bytes = 0;
    CopyDone done;
  };
  Status check(const Buffer& buffer, uint64_t offset, uint64_t bytes, const char* what) const;

  HostMemorySpace& memory_;
  std::deque<Copy> queue_;
  CopyEngineCounters counters_;
};

}  // namespace tensorwire::verbs
