// CommNet's eager message (core/protocols/oneflow_commnet/commnet_message.h)
// as a peer sends it into a receive slot: any bytes. decode() must answer a
// message or kMalformedMessage without reading outside the input, and what it
// accepts must be valid (encode_header takes it) and encode back to exactly
// the same bytes: the header it names, then the eager content it says follows
// (so one byte less is refused).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/protocols/oneflow_commnet/commnet_message.h"
#include "tests/fuzz/fuzz_check.h"

using namespace tensorwire;
using namespace tensorwire::oneflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  Result<Decoded> decoded = decode(in);
  if (!decoded) {
    FUZZ_CHECK(decoded.status().code() == StatusCode::kMalformedMessage, "decode error code");
    FUZZ_CHECK(!decoded.status().message().empty(), "an error names the field");
    return 0;
  }
  const Message& m = decoded->message;
  Result<std::vector<std::byte>> header = encode_header(m);
  FUZZ_CHECK(header.is_ok(), "decode accepts only messages encode_header takes");
  FUZZ_CHECK(header->size() == header_size(m), "header_size of a decoded message");
  FUZZ_CHECK(header->size() <= max_header_size(), "accepted headers fit a receive slot");
  FUZZ_CHECK(decoded->payload_offset == header->size(), "the content starts after the header");
  const uint64_t payload = m.type == MessageType::kEagerTensor ? m.tensor_bytes : 0;
  FUZZ_CHECK(decoded->payload_offset + payload == size, "the content is as long as it says");
  FUZZ_CHECK(std::memcmp(header->data(), data, header->size()) == 0,
             "encode_header(decode(bytes)) == the header bytes");
  FUZZ_CHECK(!decode(in.first(size - 1)).is_ok(), "a message cut by one byte is refused");
  (void)message_type_name(m.type);
  return 0;
}
