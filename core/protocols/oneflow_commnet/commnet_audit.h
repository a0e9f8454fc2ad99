// What a rank's CommNet instance does with tokens, reads, callbacks and its
// receive pool, told as it happens to the checker's invariants
// (commnet_invariants.h), which judge it against the other ranks' reports.
#pragma once

#include <cstdint>

#include "core/nic.h"

namespace tensorwire::oneflow {

enum class AuditKind : uint8_t {
  kTokenRegistered,  // this rank (sender) registered [addr, addr+length) as `token` for `peer`
  kTokenReleased,    // this rank (sender) deregistered `token` (READ_DONE, or `failed`)
  kReadPosted,       // this rank (receiver) reads [addr, addr+length) of `peer`'s `token`
  kReadCompleted,    // one of those reads completed (any status)
  kReadDoneSent,     // this rank told `peer` that `token` may go
  kRecvCallback,     // the callback of Recv number `token` (a serial) ran
  kReceivesPosted,   // a receive from `peer` was handled: `length` receives of `addr` posted now
};

struct AuditEvent {
  AuditKind kind = AuditKind::kTokenRegistered;
  RankId peer = 0;
  uint32_t token = 0;
  uint64_t addr = 0;
  uint64_t length = 0;
  // kTokenReleased: the channel failed. Its queue pair is in the error state,
  // which serves no read, so reads the reader still counts cannot touch it.
  bool failed = false;
};

class AuditSink {
 public:
  virtual ~AuditSink() = default;
  virtual void on_audit(RankId rank, const AuditEvent& event) = 0;
};

}  // namespace tensorwire::oneflow
