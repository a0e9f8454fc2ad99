// What a rank's legacy verbs instance does with its receive buffers and its
// message buffer, told as it happens to the checker's invariants
// (legacy_invariants.h), which judge the peers' RDMA writes against it.
#pragma once

#include <cstdint>
#include <string>

#include "core/nic.h"

namespace tensorwire::tf_legacy {

// The buffers a peer writes into.
enum class RxBufferKind : uint8_t { kMessage, kAck, kTensorHeader, kTensorContent };

enum class AuditKind : uint8_t {
  kRxBufferCreated,   // [addr, addr+length) of `kind` may be written by `peer` (it is idle)
  kRxBufferFreed,     // the buffer at `addr` is gone
  kRxBufferReleased,  // the buffer at `addr` was read: `peer` may write it again
  kMessagePosted,     // this rank wrote a message into `peer`'s message buffer
  kAckReceived,       // `peer` acknowledged this rank's last message
  kRecvCallback,      // the callback of Recv number `serial` ran
};

struct AuditEvent {
  AuditKind kind = AuditKind::kRxBufferCreated;
  RankId peer = 0;
  RxBufferKind buffer = RxBufferKind::kMessage;
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t serial = 0;
  std::string name;  // a tensor buffer's tensor name
};

class AuditSink {
 public:
  virtual ~AuditSink() = default;
  virtual void on_audit(RankId rank, const AuditEvent& event) = 0;
};

}  // namespace tensorwire::tf_legacy
