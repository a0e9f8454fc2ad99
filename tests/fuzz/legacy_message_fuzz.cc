// The legacy verbs protocol's control message (core/protocols/tf_verbs_legacy/
// legacy_message.h) as a peer RDMA-writes it into a message buffer or a tensor
// buffer's header slot: any bytes. decode() must answer a message or
// kMalformedMessage without reading outside the input; what it accepts must be
// valid, encode back to exactly the same bytes (one byte less is refused), and
// framed_size must find its length both alone and at the front of a longer
// slot. framed_size itself, on any bytes, answers a length within the input or
// kMalformedMessage.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/protocols/tf_verbs_legacy/legacy_message.h"
#include "tests/fuzz/fuzz_check.h"

using namespace tensorwire;
using namespace tensorwire::tf_legacy;

namespace {

// A header slot is longer than the message it holds: the same bytes with
// junk after them must frame to the same length.
void check_framed_in_slot(std::span<const std::byte> in) {
  std::vector<std::byte> slot(in.begin(), in.end());
  slot.resize(in.size() + 64, std::byte{0xa5});
  Result<size_t> framed = framed_size(slot);
  FUZZ_CHECK(framed.is_ok() && *framed == in.size(), "framed_size in a longer slot == size");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  Result<size_t> framed = framed_size(in);
  if (framed) {
    FUZZ_CHECK(*framed <= size, "framed_size stays within the input");
  } else {
    FUZZ_CHECK(framed.status().code() == StatusCode::kMalformedMessage, "framed_size error code");
  }
  Result<RdmaMessage> decoded = decode(in);
  if (!decoded) {
    FUZZ_CHECK(decoded.status().code() == StatusCode::kMalformedMessage, "decode error code");
    FUZZ_CHECK(!decoded.status().message().empty(), "an error names the field");
    return 0;
  }
  FUZZ_CHECK(validate(*decoded).is_ok(), "decode accepts only valid messages");
  FUZZ_CHECK(encoded_size(*decoded) == size, "encoded_size of a decoded message");
  FUZZ_CHECK(size <= max_encoded_size(), "accepted messages fit a message buffer");
  FUZZ_CHECK(framed.is_ok() && *framed == size, "framed_size of a decoded message == size");
  check_framed_in_slot(in);
  Result<std::vector<std::byte>> out = encode(*decoded);
  FUZZ_CHECK(out.is_ok() && out->size() == size, "encode takes what decode gave");
  FUZZ_CHECK(std::memcmp(out->data(), data, size) == 0, "encode(decode(bytes)) == bytes");
  Result<RdmaMessage> again = decode(*out);
  FUZZ_CHECK(again.is_ok() && *again == *decoded, "decode(encode(m)) == m");
  FUZZ_CHECK(!decode(in.first(size - 1)).is_ok(), "a message cut by one byte is refused");
  (void)message_type_name(decoded->type);
  return 0;
}
