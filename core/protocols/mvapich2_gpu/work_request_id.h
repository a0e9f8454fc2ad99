// What a work request is, packed into its 64-bit wr_id (never a pointer): the
// kind, the peer, and a slot of that peer's channel or an RDMA write's serial.
#pragma once

#include <cstdint>

#include "core/assert.h"
#include "core/nic.h"

namespace tensorwire::mvapich2 {

enum class WorkKind : uint8_t { kReceive = 1, kSend = 2, kWrite = 3 };

struct WorkRequestId {
  WorkKind kind = WorkKind::kReceive;
  RankId peer = 0;
  uint32_t index = 0;  // receive or send slot; an RDMA write's serial

  uint64_t pack() const {
    TW_ASSERT(peer < (1u << 30));
    return uint64_t{static_cast<uint8_t>(kind)} << 62 | uint64_t{peer} << 32 | index;
  }
  static WorkRequestId unpack(uint64_t wr_id) {
    WorkRequestId id;
    id.kind = static_cast<WorkKind>(wr_id >> 62);
    id.peer = static_cast<RankId>((wr_id >> 32) & ((1u << 30) - 1));
    id.index = static_cast<uint32_t>(wr_id);
    return id;
  }
};

}  // namespace tensorwire::mvapich2
