// What a work request is, packed into its 64-bit wr_id (never a pointer): the
// kind, the peer, and a tensor buffer's index where it has one.
#pragma once

#include <cstdint>

#include "core/assert.h"
#include "core/nic.h"

namespace tensorwire::tf_legacy {

enum class WorkKind : uint8_t {
  kReceive = 1,        // a posted receive (the setup send, or a write-with-immediate)
  kSetup = 2,          // the channel's setup send
  kMessage = 3,        // the message buffer's write
  kAck = 4,            // the ACK buffer's write
  kTensorHeader = 5,   // a tensor write's header into the peer's header slot
  kTensorContent = 6,  // a tensor write's content (with the immediate)
};

struct WorkRequestId {
  WorkKind kind = WorkKind::kReceive;
  RankId peer = 0;
  uint32_t index = 0;  // the tensor buffer's index (kTensorHeader, kTensorContent)

  uint64_t pack() const {
    TW_ASSERT(peer < (1u << 28));
    return uint64_t{static_cast<uint8_t>(kind)} << 60 | uint64_t{peer} << 32 | index;
  }
  static WorkRequestId unpack(uint64_t wr_id) {
    WorkRequestId id;
    id.kind = static_cast<WorkKind>(wr_id >> 60);
    id.peer = static_cast<RankId>((wr_id >> 32) & ((1u << 28) - 1));
    id.index = static_cast<uint32_t>(wr_id);
    return id;
  }
};

// The immediates of the seed's writes: the two fixed buffers, else the index
// of the tensor buffer written (RDMA_IMM_DATA_ACK, RDMA_IMM_DATA_MESSAGE).
inline constexpr uint32_t kImmDataAck = 0x80000000u;
inline constexpr uint32_t kImmDataMessage = 0x80000001u;

}  // namespace tensorwire::tf_legacy
