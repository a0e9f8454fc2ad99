#include "core/protocols/realm_broadcast/collective_message.h"

#include <cstring>
#include <string>

namespace tensorwire::collectives {
namespace {

// The layout below, field by field, fills the wire size; decode() knows the
// four types by their wire values.
static_assert(CollectiveMessage::kWireBytes == 4 + 4 + 8 + 8 + 4 + 4);
static_assert(static_cast<uint32_t>(CollectiveMessageType::kIbReady) == 1 &&
              static_cast<uint32_t>(CollectiveMessageType::kBytesRead) == 2 &&
              static_cast<uint32_t>(CollectiveMessageType::kAbort) == 3 &&
              static_cast<uint32_t>(CollectiveMessageType::kWindowReady) == 4);

// An ABORT's reason is an error: a code status.h names, never ok.
bool is_error_code(uint64_t raw) {
  return raw != 0 && raw <= 0xff &&
         std::strcmp(status_code_name(static_cast<StatusCode>(raw)), "UNKNOWN") != 0;
}

void put(std::array<std::byte, CollectiveMessage::kWireBytes>& out, size_t at, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) out[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

uint64_t get(std::span<const std::byte> in, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(in[at + i]) << (8 * i);
  return v;
}

}  // namespace

// Layout: type u32 | copy u32 | a u64 | b u64 | rkey u32 | reserved u32 (0).
// kIbReady: a = addr, b = ring_bytes. kBytesRead: a = bytes_read, b = 0, rkey = 0.
// kAbort: copy = 0, a = failed_rank, b = reason (its StatusCode), rkey = 0.
// kWindowReady: a = window_offset, b = window_bytes (> 0).
std::array<std::byte, CollectiveMessage::kWireBytes> CollectiveMessage::encode() const {
  std::array<std::byte, kWireBytes> out{};
  put(out, 0, static_cast<uint32_t>(type), 4);
  switch (type) {
    case CollectiveMessageType::kIbReady:
      put(out, 4, copy, 4);
      put(out, 8, addr, 8);
      put(out, 16, ring_bytes, 8);
      put(out, 24, rkey, 4);
      break;
    case CollectiveMessageType::kBytesRead:
      put(out, 4, copy, 4);
      put(out, 8, bytes_read, 8);
      break;
    case CollectiveMessageType::kAbort:
      put(out, 8, failed_rank, 8);
      put(out, 16, static_cast<uint64_t>(reason), 8);
      break;
    case CollectiveMessageType::kWindowReady:
      put(out, 4, copy, 4);
      put(out, 8, window_offset, 8);
      put(out, 16, window_bytes, 8);
      put(out, 24, rkey, 4);
      break;
  }
  return out;
}

namespace {

Result<CollectiveMessage> decode_abort(std::span<const std::byte> in, CollectiveMessage& m) {
  if (m.copy != 0 || get(in, 24, 4) != 0) {
    return Status(StatusCode::kMalformedMessage, "ABORT with non-zero unused fields");
  }
  const uint64_t rank = get(in, 8, 8);
  if (rank > 0xffffffffu) {
    return Status(StatusCode::kMalformedMessage, "ABORT names rank " + std::to_string(rank) +
                                                     ", beyond any rank id");
  }
  const uint64_t reason = get(in, 16, 8);
  if (!is_error_code(reason)) {
    return Status(StatusCode::kMalformedMessage,
                  "ABORT with reason " + std::to_string(reason) + ", not an error code");
  }
  m.failed_rank = static_cast<uint32_t>(rank);
  m.reason = static_cast<StatusCode>(reason);
  return m;
}

}  // namespace

Result<CollectiveMessage> CollectiveMessage::decode(std::span<const std::byte> in) {
  if (in.size() != kWireBytes) {
    return Status(StatusCode::kMalformedMessage, "collective message of " + std::to_string(in.size()) +
                                                     " bytes, expected " + std::to_string(kWireBytes));
  }
  CollectiveMessage m;
  const uint64_t type = get(in, 0, 4);
  if (type < 1 || type > 4) {
    return Status(StatusCode::kMalformedMessage, "unknown collective message type " + std::to_string(type));
  }
  if (get(in, 28, 4) != 0) {
    return Status(StatusCode::kMalformedMessage, "collective message reserved field is not zero");
  }
  m.type = static_cast<CollectiveMessageType>(type);
  m.copy = static_cast<uint32_t>(get(in, 4, 4));
  switch (m.type) {
    case CollectiveMessageType::kIbReady:
      m.addr = get(in, 8, 8);
      m.ring_bytes = get(in, 16, 8);
      m.rkey = static_cast<uint32_t>(get(in, 24, 4));
      break;
    case CollectiveMessageType::kBytesRead:
      m.bytes_read = get(in, 8, 8);
      if (get(in, 16, 8) != 0 || get(in, 24, 4) != 0) {
        return Status(StatusCode::kMalformedMessage, "BYTES_READ with non-zero unused fields");
      }
      break;
    case CollectiveMessageType::kAbort:
      return decode_abort(in, m);
    case CollectiveMessageType::kWindowReady:
      m.window_offset = get(in, 8, 8);
      m.window_bytes = get(in, 16, 8);
      m.rkey = static_cast<uint32_t>(get(in, 24, 4));
      if (m.window_bytes == 0) {
        return Status(StatusCode::kMalformedMessage, "WINDOW_READY with an empty window");
      }
      break;
  }
  return m;
}

}  // namespace tensorwire::collectives
