#include "launch/coordinator_frame.h"

#include <cstring>

namespace tensorwire::launch {
namespace {

constexpr std::array<std::byte, 4> kMagic = {std::byte{'T'}, std::byte{'W'}, std::byte{'C'},
                                             std::byte{'1'}};

void put_u32(std::vector<std::byte>& out, uint32_t value) {
  out.push_back(std::byte(value >> 24));
  out.push_back(std::byte(value >> 16));
  out.push_back(std::byte(value >> 8));
  out.push_back(std::byte(value));
}

uint32_t get_u32(std::span<const std::byte> in, size_t at) {
  return (std::to_integer<uint32_t>(in[at]) << 24) | (std::to_integer<uint32_t>(in[at + 1]) << 16) |
         (std::to_integer<uint32_t>(in[at + 2]) << 8) | std::to_integer<uint32_t>(in[at + 3]);
}

Status malformed(const std::string& what) { return Status(StatusCode::kMalformedMessage, what); }

}  // namespace

const char* frame_type_name(FrameType type) {
  switch (type) {
    case FrameType::kHello: return "hello";
    case FrameType::kGather: return "gather";
    case FrameType::kGatherResult: return "gather result";
    case FrameType::kAbort: return "abort";
  }
  return "unknown";
}

std::array<std::byte, kFrameHeaderBytes> encode_frame_header(const FrameHeader& header) {
  std::vector<std::byte> out(kMagic.begin(), kMagic.end());
  out.push_back(std::byte(static_cast<uint8_t>(header.type)));
  out.push_back(std::byte{0});
  out.push_back(std::byte{0});
  out.push_back(std::byte{0});
  put_u32(out, header.rank);
  put_u32(out, header.body_bytes);
  std::array<std::byte, kFrameHeaderBytes> bytes{};
  std::memcpy(bytes.data(), out.data(), bytes.size());
  return bytes;
}

Result<FrameHeader> decode_frame_header(std::span<const std::byte, kFrameHeaderBytes> bytes,
                                        uint32_t max_body_bytes) {
  if (std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    return malformed(
        "a message that is not a tensorwire coordinator message (bad magic, want \"TWC1\")");
  }
  const uint8_t type = std::to_integer<uint8_t>(bytes[4]);
  if (type < static_cast<uint8_t>(FrameType::kHello) ||
      type > static_cast<uint8_t>(FrameType::kAbort)) {
    return malformed("a message of unknown type " + std::to_string(type));
  }
  if (bytes[5] != std::byte{0} || bytes[6] != std::byte{0} || bytes[7] != std::byte{0}) {
    return malformed("a message header whose reserved bytes are not zero");
  }
  FrameHeader header;
  header.type = static_cast<FrameType>(type);
  header.rank = get_u32(bytes, 8);
  header.body_bytes = get_u32(bytes, 12);
  const uint32_t limit = header.type == FrameType::kAbort ? kMaxAbortReasonBytes : max_body_bytes;
  if (header.body_bytes > limit) {
    return malformed(std::string("a ") + frame_type_name(header.type) +
                     " message announcing a body of " + std::to_string(header.body_bytes) +
                     " bytes, more than the " + std::to_string(limit) + " allowed");
  }
  return header;
}

std::vector<std::byte> encode_hello_body(uint32_t world_size) {
  std::vector<std::byte> out;
  put_u32(out, world_size);
  return out;
}

Result<uint32_t> decode_hello_body(std::span<const std::byte> body) {
  if (body.size() != 4) {
    return malformed("a hello body of " + std::to_string(body.size()) + " bytes, want 4");
  }
  return get_u32(body, 0);
}

std::vector<std::byte> encode_gather_body(uint32_t sequence, std::string_view bytes) {
  std::vector<std::byte> out;
  put_u32(out, sequence);
  for (char c : bytes) out.push_back(std::byte(static_cast<unsigned char>(c)));
  return out;
}

Result<GatherContribution> decode_gather_body(std::span<const std::byte> body) {
  if (body.size() < 4) {
    return malformed("a gather body of " + std::to_string(body.size()) + " bytes, want at least 4");
  }
  if (body.size() - 4 > kMaxGatherEntryBytes) {
    return malformed("a gather entry of " + std::to_string(body.size() - 4) +
                     " bytes, more than the " + std::to_string(kMaxGatherEntryBytes) + " allowed");
  }
  GatherContribution c;
  c.sequence = get_u32(body, 0);
  c.bytes.assign(reinterpret_cast<const char*>(body.data()) + 4, body.size() - 4);
  return c;
}

std::vector<std::byte> encode_gather_result_body(uint32_t sequence,
                                                 const std::vector<std::string>& entries) {
  std::vector<std::byte> out;
  put_u32(out, sequence);
  put_u32(out, static_cast<uint32_t>(entries.size()));
  for (const std::string& e : entries) {
    put_u32(out, static_cast<uint32_t>(e.size()));
    for (char c : e) out.push_back(std::byte(static_cast<unsigned char>(c)));
  }
  return out;
}

Result<std::vector<std::string>> decode_gather_result_body(std::span<const std::byte> body,
                                                           uint32_t expected_sequence,
                                                           uint32_t expected_count) {
  if (body.size() < 8) {
    return malformed("a gather result of " + std::to_string(body.size()) +
                     " bytes, want at least 8");
  }
  const uint32_t sequence = get_u32(body, 0);
  if (sequence != expected_sequence) {
    return malformed("a gather result for exchange " + std::to_string(sequence) +
                     ", want exchange " + std::to_string(expected_sequence));
  }
  const uint32_t count = get_u32(body, 4);
  if (count != expected_count) {
    return malformed("a gather result holding " + std::to_string(count) + " entries, want " +
                     std::to_string(expected_count));
  }
  std::vector<std::string> entries;
  entries.reserve(count);
  size_t at = 8;
  for (uint32_t i = 0; i < count; ++i) {
    if (body.size() - at < 4) {
      return malformed("a gather result that ends inside the length of entry " + std::to_string(i));
    }
    const uint32_t length = get_u32(body, at);
    at += 4;
    if (length > kMaxGatherEntryBytes) {
      return malformed("a gather result whose entry " + std::to_string(i) + " of " +
                       std::to_string(length) + " bytes is more than the " +
                       std::to_string(kMaxGatherEntryBytes) + " allowed");
    }
    if (body.size() - at < length) {
      return malformed("a gather result that ends inside entry " + std::to_string(i) + " (" +
                       std::to_string(length) + " bytes announced, " +
                       std::to_string(body.size() - at) + " left)");
    }
    entries.emplace_back(reinterpret_cast<const char*>(body.data()) + at, length);
    at += length;
  }
  if (at != body.size()) {
    return malformed("a gather result with " + std::to_string(body.size() - at) +
                     " bytes after its last entry");
  }
  return entries;
}

std::vector<std::byte> encode_abort_body(std::string_view why) {
  std::vector<std::byte> out;
  for (char c : why.substr(0, kMaxAbortReasonBytes)) {
    out.push_back(std::byte(static_cast<unsigned char>(c)));
  }
  return out;
}

Result<std::string> decode_abort_body(std::span<const std::byte> body) {
  if (body.size() > kMaxAbortReasonBytes) {
    return malformed("an abort reason of " + std::to_string(body.size()) +
                     " bytes, more than the " + std::to_string(kMaxAbortReasonBytes) + " allowed");
  }
  std::string why(reinterpret_cast<const char*>(body.data()), body.size());
  // It is printed: control characters would garble the line it lands on.
  for (char& c : why) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return why;
}

uint32_t max_body_bytes(FrameType type, uint32_t world_size) {
  switch (type) {
    case FrameType::kHello: return 4;
    case FrameType::kGather: return 4 + kMaxGatherEntryBytes;
    case FrameType::kGatherResult: {
      const uint64_t world = world_size < kMaxCoordinatorWorld ? world_size : kMaxCoordinatorWorld;
      return static_cast<uint32_t>(8 + world * (4 + kMaxGatherEntryBytes));
    }
    case FrameType::kAbort: return kMaxAbortReasonBytes;
  }
  return 0;
}

}  // namespace tensorwire::launch
