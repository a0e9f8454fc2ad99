#include "core/protocols/realm_broadcast/collective_message.h"

#include <string>

namespace tensorwire::collectives {
namespace {

// The layout below, field by field, fills the wire size; decode() knows the
// two types by their wire values.
static_assert(CollectiveMessage::kWireBytes == 4 + 4 + 8 + 8 + 4 + 4);
static_assert(static_cast<uint32_t>(CollectiveMessageType::kIbReady) == 1 &&
              static_cast<uint32_t>(CollectiveMessageType::kBytesRead) == 2);

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
std::array<std::byte, CollectiveMessage::kWireBytes> CollectiveMessage::encode() const {
  std::array<std::byte, kWireBytes> out{};
  put(out, 0, static_cast<uint32_t>(type), 4);
  put(out, 4, copy, 4);
  if (type == CollectiveMessageType::kIbReady) {
    put(out, 8, addr, 8);
    put(out, 16, ring_bytes, 8);
    put(out, 24, rkey, 4);
  } else {
    put(out, 8, bytes_read, 8);
  }
  return out;
}

Result<CollectiveMessage> CollectiveMessage::decode(std::span<const std::byte> in) {
  if (in.size() != kWireBytes) {
    return Status(StatusCode::kMalformedMessage, "collective message of " + std::to_string(in.size()) +
                                                     " bytes, expected " + std::to_string(kWireBytes));
  }
  CollectiveMessage m;
  const uint64_t type = get(in, 0, 4);
  if (type != 1 && type != 2) {
    return Status(StatusCode::kMalformedMessage, "unknown collective message type " + std::to_string(type));
  }
  if (get(in, 28, 4) != 0) {
    return Status(StatusCode::kMalformedMessage, "collective message reserved field is not zero");
  }
  m.type = static_cast<CollectiveMessageType>(type);
  m.copy = static_cast<uint32_t>(get(in, 4, 4));
  if (m.type == CollectiveMessageType::kIbReady) {
    m.addr = get(in, 8, 8);
    m.ring_bytes = get(in, 16, 8);
    m.rkey = static_cast<uint32_t>(get(in, 24, 4));
  } else {
    m.bytes_read = get(in, 8, 8);
    if (get(in, 16, 8) != 0 || get(in, 24, 4) != 0) {
      return Status(StatusCode::kMalformedMessage, "BYTES_READ with non-zero unused fields");
    }
  }
  return m;
}

}  // namespace tensorwire::collectives
