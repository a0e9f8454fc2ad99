// What a channel tells its peer once, before any message: where its receive
// buffers are (the seed's RdmaMgr set channels up through a gRPC service,
// GetRemoteAddress; here it is the one plain send a channel makes). The peer
// writes messages, ACKs and tensor-write headers there. Untrusted bytes:
// decode checks the format, the length and every range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace tensorwire::tf_legacy {

inline constexpr uint8_t kSetupFormatByte = 0xB4;
inline constexpr size_t kChannelSetupBytes = 41;

struct RemoteRegion {
  uint64_t addr = 0;
  uint32_t rkey = 0;
  friend bool operator==(const RemoteRegion&, const RemoteRegion&) = default;
};

struct ChannelSetup {
  RemoteRegion rx_message_buffer;  // kMessageBufferBytes
  RemoteRegion rx_ack_buffer;      // kMessageBufferBytes
  RemoteRegion rx_header_table;    // header_slots x kMessageBufferBytes
  uint32_t header_slots = 0;       // tensor buffers the peer may have to this rank
  friend bool operator==(const ChannelSetup&, const ChannelSetup&) = default;
};

std::vector<std::byte> encode_setup(const ChannelSetup& s);
// kMalformedMessage naming the field for anything but exactly one valid
// record of at most `max_slots` header slots.
Result<ChannelSetup> decode_setup(std::span<const std::byte> in, uint32_t max_slots);

}  // namespace tensorwire::tf_legacy
