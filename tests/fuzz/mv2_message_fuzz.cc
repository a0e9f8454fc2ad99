// MVAPICH2-GPU's control message (core/protocols/mvapich2_gpu/mv2_message.h)
// as a peer sends it into a receive slot: any bytes; the properties are
// eager_message_properties.h's.
#include <cstddef>
#include <cstdint>

#include "core/protocols/mvapich2_gpu/eager_channel.h"
#include "tests/fuzz/eager_message_properties.h"

using namespace tensorwire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::check_eager_message<mvapich2::Mv2Wire>(
      data, size, [](const mvapich2::Message& m) { return mvapich2::header_size(m); });
}
