// The broadcast protocol's control message (core/protocols/realm_broadcast/
// collective_message.h) as a peer sends it: any bytes. decode() must answer a
// message or kMalformedMessage, and what it accepts encodes back to the same
// 32 bytes (the reserved and unused fields are checked to be zero).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "core/protocols/realm_broadcast/collective_message.h"
#include "tests/fuzz/fuzz_check.h"

using namespace tensorwire;
using collectives::CollectiveMessage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  Result<CollectiveMessage> decoded = CollectiveMessage::decode(in);
  if (!decoded) {
    FUZZ_CHECK(decoded.status().code() == StatusCode::kMalformedMessage, "decode error code");
    return 0;
  }
  FUZZ_CHECK(size == CollectiveMessage::kWireBytes, "only whole messages decode");
  const auto out = decoded->encode();
  FUZZ_CHECK(std::memcmp(out.data(), data, size) == 0, "encode(decode(bytes)) == bytes");
  return 0;
}
