// What a rank's MVAPICH2-GPU instance does with blocks, vbufs, writes and
// FINs, told as it happens to the checker's invariants (mv2_invariants.h),
// which judge it against the other ranks' reports and the simulated hardware.
#pragma once

#include <cstdint>

#include "core/nic.h"

namespace tensorwire::mvapich2 {

enum class AuditKind : uint8_t {
  // Receiver: a CTS offers [addr, addr+length) of this rank to `peer` for
  // (transfer, block).
  kBlockOffered,
  // Receiver: (transfer, block) of `peer` has been taken out of its range (a
  // vbuf copied to the GPU, or the user's buffer after the FIN), or a failed
  // transfer gave the range up; the range may be offered again.
  kBlockCopiedOut,
  // Sender: a copy into the staging range [addr, addr+length) was submitted.
  kStagingFilled,
  // Sender: the RDMA write of (transfer, block) from [addr, addr+length) to
  // `remote_addr` of `peer` was posted.
  kWritePosted,
  // Sender: that write completed (`failed`: with an error).
  kWriteCompleted,
  // Sender: the FIN of (transfer, block) was sent to `peer`.
  kFinSent,
  // Sender: the user's buffer of `transfer` (of `block` blocks) was given
  // back to the application (`failed`: with an error).
  kSendReleased,
};

struct AuditEvent {
  AuditKind kind = AuditKind::kBlockOffered;
  RankId peer = 0;
  uint32_t transfer = 0;
  uint32_t block = 0;
  uint64_t addr = 0;
  uint64_t length = 0;
  uint64_t remote_addr = 0;
  bool failed = false;
};

class AuditSink {
 public:
  virtual ~AuditSink() = default;
  virtual void on_audit(RankId rank, const AuditEvent& event) = 0;
};

}  // namespace tensorwire::mvapich2
