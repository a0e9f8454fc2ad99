// A string tensor's serialized content (core/protocols/tf_verbs_zero_copy/
// tensor_proto.h), RDMA-written by the peer into our buffer: any bytes. The
// first 8 input bytes are the element count the receiver expects (from the
// meta-data, also the peer's), the rest the payload. deserialize_strings()
// must check every length before allocating from it, and what it accepts must
// serialize back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/protocols/tf_verbs_zero_copy/tensor_proto.h"
#include "tests/fuzz/fuzz_check.h"

using namespace tensorwire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < sizeof(uint64_t)) return 0;
  uint64_t expected = 0;
  std::memcpy(&expected, data, sizeof expected);
  const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(data) + 8, size - 8);
  Result<std::vector<std::string>> strings = wire::deserialize_strings(payload, expected);
  if (!strings) {
    FUZZ_CHECK(strings.status().code() == StatusCode::kMalformedMessage, "error code");
    return 0;
  }
  FUZZ_CHECK(strings->size() == expected, "as many strings as expected");
  FUZZ_CHECK(wire::serialized_strings_size(*strings) == payload.size(), "serialized size");
  std::vector<std::byte> out(payload.size());
  Result<size_t> written = wire::serialize_strings(*strings, out);
  FUZZ_CHECK(written.is_ok() && *written == payload.size(), "serialize takes what came back");
  FUZZ_CHECK(out.empty() || std::memcmp(out.data(), payload.data(), out.size()) == 0,
             "serialize(deserialize(bytes)) == bytes");
  return 0;
}
