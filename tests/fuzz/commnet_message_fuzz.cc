// CommNet's eager message (core/protocols/oneflow_commnet/commnet_message.h)
// as a peer sends it into a receive slot: any bytes; the properties are
// eager_message_properties.h's.
#include <cstddef>
#include <cstdint>

#include "core/protocols/oneflow_commnet/eager_channel.h"
#include "tests/fuzz/eager_message_properties.h"

using namespace tensorwire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::check_eager_message<oneflow::CommNetWire>(
      data, size, [](const oneflow::Message& m) { return oneflow::header_size(m); });
}
