// A workload: what the application does, step by step, as data. Scenario
// files become one of these; the WorkloadDriver plays it against a protocol.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/memory.h"
#include "core/nic.h"
#include "core/tensor.h"

namespace tensorwire {

// One tensor moving from the rank that Sends it to the rank that Recvs it.
struct TensorTransfer {
  std::string name;  // rendezvous key together with the step id
  RankId src = 0;
  RankId dst = 0;
  DataType dtype = DataType::kFloat32;
  TensorShape shape;
  MemoryKind src_kind = MemoryKind::kHostPinned;
  uint32_t src_device = 0;
  MemoryKind dst_kind = MemoryKind::kHostPinned;
  uint32_t dst_device = 0;
  bool is_dead = false;
  uint32_t string_bytes = 0;  // kString: bytes of each element's string
  // When, after the phase starts, the application calls Send / Recv. Their
  // order decides Send-before-Recv or Recv-before-Send.
  TimeNs send_offset_ns = 0;
  TimeNs recv_offset_ns = 0;
};

// Transfers issued together; the phase ends when every Recv has completed.
struct WorkloadPhase {
  std::string label;            // "pull", "push", "tensors"
  TimeNs compute_before_ns = 0; // application compute before the phase starts
  std::vector<TensorTransfer> transfers;
};

struct WorkloadStep {
  uint64_t step_id = 0;
  std::vector<WorkloadPhase> phases;
};

struct Workload {
  std::string kind;  // "tensors" or "parameter_server"
  std::vector<WorkloadStep> steps;
};

}  // namespace tensorwire
