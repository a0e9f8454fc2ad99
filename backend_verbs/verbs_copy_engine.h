// One rank's CopyEngine on a real machine. Host-to-host copies are done with
// memcpy by the rank's progress loop (progress()), not inside submit(), so a
// copy completes asynchronously as cudaMemcpyAsync's would and `done` runs on
// the progress loop like every other completion. A copy to or from GPU memory
// (the host-proxy path of a GPU without GPUDirect) goes to that GPU's CUDA
// stream with cudaMemcpyAsync; progress() polls the streams' events and runs
// the `done`s of finished copies, in each stream's order. The source must stay
// valid until `done` runs, as for cudaMemcpyAsync.
//
// Ranges are checked at submit against the rank's VerbsMemorySpace: a range
// outside a live allocation answers an error and nothing is submitted.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>

#include "backend_verbs/cuda_memory.h"
#include "backend_verbs/verbs_memory_space.h"
#include "core/copy_engine.h"

namespace tensorwire::verbs {

struct CopyEngineCounters {
  uint64_t copies = 0;
  uint64_t bytes = 0;
};

class VerbsCopyEngine final : public CopyEngine {
 public:
  explicit VerbsCopyEngine(VerbsMemorySpace& memory) : memory_(memory) {}

  Status submit(const Buffer& dst, uint64_t dst_offset, const Buffer& src, uint64_t src_offset,
                uint64_t bytes, CopyDone done) override;

  // Performs every copy submitted so far, in order, and runs their `done`s
  // (copies submitted from a `done` wait for the next call). Returns how many.
  uint32_t progress();
  size_t pending() const { return queue_.size() + device_done_.size(); }
  const CopyEngineCounters& counters() const { return counters_; }

 private:
  struct Copy {
    uint64_t dst_addr = 0;
    uint64_t src_addr = 0;
    uint64_t bytes = 0;
    CopyDone done;
  };
  Status check(const Buffer& buffer, uint64_t offset, uint64_t bytes, const char* what) const;
  Status submit_device(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                       uint64_t src_offset, uint64_t bytes, CopyDone done);
  uint32_t progress_device();

  VerbsMemorySpace& memory_;
  std::deque<Copy> queue_;
  // Copies involving a GPU: one CUDA stream per GPU, made on first use; each
  // copy's `done` by its token.
  std::map<uint32_t, std::unique_ptr<cuda::CopyStream>> streams_;
  std::map<uint64_t, CopyDone> device_done_;
  std::map<uint32_t, std::deque<uint64_t>> stream_tokens_;  // per GPU, in submission order
  uint64_t next_token_ = 1;
  CopyEngineCounters counters_;
};

}  // namespace tensorwire::verbs
