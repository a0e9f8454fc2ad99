// The properties of an eager message decoder (OneFlow CommNet's and
// MVAPICH2-GPU's wire formats, through the `Wire` traits their eager channels
// use: core/protocols/eager_channel.h) on any bytes a peer sends into a
// receive slot. decode() must answer a message or kMalformedMessage without
// reading outside the input, and what it accepts must be valid (encode_header
// takes it) and encode back to exactly the same bytes: the header it names
// (`header_size` bytes), then the inline content it says follows (so one byte
// less is refused).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "tests/fuzz/fuzz_check.h"

namespace tensorwire::fuzz {

template <typename Wire, typename HeaderSize>
int check_eager_message(const uint8_t* data, size_t size, HeaderSize header_size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  Result<typename Wire::Decoded> decoded = Wire::decode(in);
  if (!decoded) {
    FUZZ_CHECK(decoded.status().code() == StatusCode::kMalformedMessage, "decode error code");
    FUZZ_CHECK(!decoded.status().message().empty(), "an error names the field");
    return 0;
  }
  const typename Wire::Message& m = decoded->message;
  Result<std::vector<std::byte>> header = Wire::encode_header(m);
  FUZZ_CHECK(header.is_ok(), "decode accepts only messages encode_header takes");
  FUZZ_CHECK(header->size() == header_size(m), "header_size of a decoded message");
  FUZZ_CHECK(header->size() <= Wire::max_header_size(), "accepted headers fit a receive slot");
  FUZZ_CHECK(decoded->payload_offset == header->size(), "the content starts after the header");
  const uint64_t payload = m.type == Wire::kInlineContent ? m.tensor_bytes : 0;
  FUZZ_CHECK(decoded->payload_offset + payload == size, "the content is as long as it says");
  FUZZ_CHECK(std::memcmp(header->data(), data, header->size()) == 0,
             "encode_header(decode(bytes)) == the header bytes");
  FUZZ_CHECK(!Wire::decode(in.first(size - 1)).is_ok(), "a message cut by one byte is refused");
  return 0;
}

}  // namespace tensorwire::fuzz
