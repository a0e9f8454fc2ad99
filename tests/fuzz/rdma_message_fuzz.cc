// The zero-copy protocol's control message (core/protocols/tf_verbs_zero_copy/
// rdma_message.h) as a peer sends it into our control ring: any bytes.
// decode() must answer a value or kMalformedMessage without reading outside
// the input, and what it accepts must be valid and encode back to exactly the
// same bytes (the layout has one encoding per message).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/protocols/tf_verbs_zero_copy/rdma_message.h"
#include "tests/fuzz/fuzz_check.h"

using namespace tensorwire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  Result<wire::RdmaMessage> decoded = wire::decode(in);
  if (!decoded) {
    FUZZ_CHECK(decoded.status().code() == StatusCode::kMalformedMessage, "decode error code");
    return 0;
  }
  FUZZ_CHECK(validate(*decoded).is_ok(), "decode accepts only valid messages");
  FUZZ_CHECK(size <= wire::max_encoded_size(), "accepted messages fit a ring slot");
  FUZZ_CHECK(wire::encoded_size(*decoded) == size, "encoded_size of a decoded message");
  std::vector<std::byte> out(size);
  Result<size_t> written = wire::encode(*decoded, out);
  FUZZ_CHECK(written.is_ok() && *written == size, "encode takes what decode gave");
  FUZZ_CHECK(std::memcmp(out.data(), data, size) == 0, "encode(decode(bytes)) == bytes");
  (void)wire::to_string(*decoded);
  return 0;
}
