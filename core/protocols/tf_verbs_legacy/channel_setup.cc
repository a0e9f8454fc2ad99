#include "core/protocols/tf_verbs_legacy/channel_setup.h"

#include <limits>
#include <string>

#include "core/assert.h"
#include "core/protocols/tf_verbs_legacy/legacy_options.h"

namespace tensorwire::tf_legacy {
namespace {

void put(std::vector<std::byte>& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}

uint64_t get(std::span<const std::byte> in, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(in[at + i]) << (8 * i);
  return v;
}

Status bad(const char* field, size_t offset, const std::string& why) {
  return Status(StatusCode::kMalformedMessage,
                std::string("legacy verbs channel setup: ") + field + " at byte " +
                    std::to_string(offset) + ": " + why);
}

}  // namespace

std::vector<std::byte> encode_setup(const ChannelSetup& s) {
  std::vector<std::byte> out;
  put(out, kSetupFormatByte, 1);
  for (const RemoteRegion* r : {&s.rx_message_buffer, &s.rx_ack_buffer, &s.rx_header_table}) {
    put(out, r->addr, 8);
    put(out, r->rkey, 4);
  }
  put(out, s.header_slots, 4);
  TW_ASSERT(out.size() == kChannelSetupBytes);
  return out;
}

Result<ChannelSetup> decode_setup(std::span<const std::byte> in, uint32_t max_slots) {
  if (in.size() != kChannelSetupBytes) {
    return bad("length", 0, std::to_string(in.size()) + " bytes, expected " +
                                std::to_string(kChannelSetupBytes));
  }
  if (static_cast<uint8_t>(in[0]) != kSetupFormatByte) return bad("format", 0, "unknown format");
  ChannelSetup s;
  size_t at = 1;
  for (RemoteRegion* r : {&s.rx_message_buffer, &s.rx_ack_buffer, &s.rx_header_table}) {
    r->addr = get(in, at, 8);
    r->rkey = static_cast<uint32_t>(get(in, at + 8, 4));
    at += 12;
  }
  s.header_slots = static_cast<uint32_t>(get(in, at, 4));
  if (s.header_slots == 0 || s.header_slots > max_slots) {
    return bad("header_slots", at, std::to_string(s.header_slots) + ", expected 1.." +
                                      std::to_string(max_slots));
  }
  const uint64_t table = uint64_t{s.header_slots} * kMessageBufferBytes;
  if (s.rx_header_table.addr > std::numeric_limits<uint64_t>::max() - table ||
      s.rx_message_buffer.addr > std::numeric_limits<uint64_t>::max() - kMessageBufferBytes ||
      s.rx_ack_buffer.addr > std::numeric_limits<uint64_t>::max() - kMessageBufferBytes) {
    return bad("addr", 1, "a buffer's range wraps around");
  }
  return s;
}

}  // namespace tensorwire::tf_legacy
