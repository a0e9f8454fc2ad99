// The control messages of a collective copy, sent between the ranks at the two
// ends of a network copy. Data itself moves by RDMA write with immediate (the
// immediate is the copy id, the completion's byte_len the bytes written: Realm's
// update_pre_bytes_write); these carry the rest:
//   IB_READY    receiver -> writer: the target buffer's address, rkey and ring size;
//   BYTES_READ  receiver -> writer: every consumer of the target IB buffer has
//               read this far, so the writer may reuse the ring up to here
//               (Realm's update_next_bytes_read, already the minimum over consumers);
//   WINDOW_READY receiver -> writer: the next registration window of a target
//               instance registered piecewise (BroadcastOptions::
//               registration_window_bytes): its offset in the instance, its
//               length and rkey; windows come in order, each right after the
//               last. Not in Realm (which registers memories whole): it lets
//               the receiver register a large instance as the stream reaches it;
//   ABORT       any rank -> its peers: the broadcast cannot complete, because
//               `failed_rank` failed with `reason`; the receiver ends its own
//               unfinished part with an error and passes the news on, so that
//               no live rank waits for a peer that will never go on.
// Fixed 32 bytes, little-endian. A peer's bytes are untrusted: decode checks
// length, type, reserved and unused fields and an ABORT's reason code.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/status.h"

namespace tensorwire::collectives {

enum class CollectiveMessageType : uint32_t {
  kIbReady = 1,
  kBytesRead = 2,
  kAbort = 3,
  kWindowReady = 4,
};

struct CollectiveMessage {
  static constexpr size_t kWireBytes = 32;
  CollectiveMessageType type = CollectiveMessageType::kIbReady;
  uint32_t copy = 0;        // kIbReady, kBytesRead (0 in kAbort)
  uint64_t addr = 0;        // kIbReady
  uint64_t ring_bytes = 0;  // kIbReady
  uint32_t rkey = 0;        // kIbReady, kWindowReady
  uint64_t window_offset = 0;  // kWindowReady: where the window starts in the instance
  uint64_t window_bytes = 0;   // kWindowReady: its length (> 0)
  uint64_t bytes_read = 0;  // kBytesRead
  uint32_t failed_rank = 0;               // kAbort: the rank whose failure it passes on
  StatusCode reason = StatusCode::kOk;    // kAbort: that rank's error (never ok)

  std::array<std::byte, kWireBytes> encode() const;
  static Result<CollectiveMessage> decode(std::span<const std::byte> bytes);
};

}  // namespace tensorwire::collectives
