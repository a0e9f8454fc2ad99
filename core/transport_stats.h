// What one rank's transport did: bytes, operations, copies, registrations.
// Counted where the work is done (the initiator of a transfer counts it), by
// the simulator's NIC and by the counting NIC over verbs alike.
#pragma once

#include <cstdint>

namespace tensorwire {

struct TransportStats {
  uint64_t bytes_on_wire_tx = 0;  // payload bytes this rank's port sent (reads count at the responder)
  uint64_t sends = 0;             // successful sends (control messages)
  uint64_t rdma_writes = 0;       // successful plain writes
  uint64_t rdma_writes_with_imm = 0;
  uint64_t rdma_reads = 0;
  uint64_t registrations = 0;     // register_memory calls that succeeded
  uint64_t registered_bytes = 0;
  uint64_t deregistrations = 0;
  uint64_t cpu_copy_bytes = 0;    // MemorySpace::cpu_copy
  uint64_t cpu_copies = 0;
  uint64_t copy_engine_bytes = 0; // CopyEngine::submit (host<->device over PCIe)
  uint64_t copy_engine_copies = 0;
  uint64_t rnr_retries = 0;       // sends that found no posted receive and waited
  uint64_t completions_error = 0; // completions delivered with a non-success status

  TransportStats& operator+=(const TransportStats& o) {
    bytes_on_wire_tx += o.bytes_on_wire_tx;
    sends += o.sends;
    rdma_writes += o.rdma_writes;
    rdma_writes_with_imm += o.rdma_writes_with_imm;
    rdma_reads += o.rdma_reads;
    registrations += o.registrations;
    registered_bytes += o.registered_bytes;
    deregistrations += o.deregistrations;
    cpu_copy_bytes += o.cpu_copy_bytes;
    cpu_copies += o.cpu_copies;
    copy_engine_bytes += o.copy_engine_bytes;
    copy_engine_copies += o.copy_engine_copies;
    rnr_retries += o.rnr_retries;
    completions_error += o.completions_error;
    return *this;
  }
};

}  // namespace tensorwire
