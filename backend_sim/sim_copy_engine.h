// Copies off the NIC. Host<->device copies go over PCIe: each GPU has one copy
// engine; copies on an engine run one after another, each taking
// pcie_latency + bytes/pcie_bandwidth (the next copy may start once the
// previous one's bytes have moved). Device<->device copies run on the source
// GPU's engine, over NVLink when the cluster has it. Host<->host copies are a
// memcpy on the rank's CPU timeline.
#pragma once

#include <vector>

#include "backend_sim/sim_context.h"
#include "backend_sim/sim_memory.h"
#include "core/copy_engine.h"

namespace tensorwire::sim {

class SimCopyEngine final : public CopyEngine {
 public:
  SimCopyEngine(SimContext& context, SimMemorySpace& memory, uint32_t rank);
  Status submit(const Buffer& dst, uint64_t dst_offset, const Buffer& src, uint64_t src_offset,
                uint64_t bytes, CopyDone done) override;

 private:
  Status submit_host_copy(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                          uint64_t src_offset, uint64_t bytes, CopyDone done);
  void schedule_copy(TimeNs end, const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                     uint64_t src_offset, uint64_t bytes, CopyDone done);

  SimContext& context_;
  SimMemorySpace& memory_;
  uint32_t rank_;
  std::vector<TimeNs> engine_free_ns_;  // per GPU
};

}  // namespace tensorwire::sim
