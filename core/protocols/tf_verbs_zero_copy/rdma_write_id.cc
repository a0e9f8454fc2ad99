#include "core/protocols/tf_verbs_zero_copy/rdma_write_id.h"

#include "core/assert.h"

namespace tensorwire::tf_verbs {

const char* write_id_type_name(RdmaWriteIDType type) {
  switch (type) {
    case RdmaWriteIDType::kControlMessage: return "control_message";
    case RdmaWriteIDType::kTensorWrite: return "tensor_write";
    case RdmaWriteIDType::kTensorProtoWrite: return "tensor_proto_write";
    case RdmaWriteIDType::kRingReceive: return "ring_receive";
  }
  return "unknown";
}

// The type takes the 8 bits above the context.
static_assert(RdmaWriteID::kContextBits + 8 == 64);

uint64_t RdmaWriteID::encode() const {
  // Slots and response ids stay far below 2^56: masking never drops a bit.
  TW_ASSERT_MSG(context <= kMaxContext, "a context fits its 56 bits");
  return (uint64_t{static_cast<uint8_t>(type)} << kContextBits) | (context & kMaxContext);
}

std::optional<RdmaWriteID> RdmaWriteID::decode(uint64_t wr_id) {
  uint8_t raw = static_cast<uint8_t>(wr_id >> kContextBits);
  if (raw < static_cast<uint8_t>(RdmaWriteIDType::kControlMessage) ||
      raw > static_cast<uint8_t>(RdmaWriteIDType::kRingReceive)) {
    return std::nullopt;
  }
  return RdmaWriteID{static_cast<RdmaWriteIDType>(raw), wr_id & kMaxContext};
}

}  // namespace tensorwire::tf_verbs
