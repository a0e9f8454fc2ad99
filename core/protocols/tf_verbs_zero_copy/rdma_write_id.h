// Work-request ids (RdmaWriteID): what a completion is about.
//
// The 64-bit wr_id holds the RdmaWriteIDType in its top 8 bits and a context
// in the low 56 bits: a ring slot, a message-buffer slot or a response id.
// Never a raw pointer: a completion that arrives after its owner is gone
// (flushed work after a failure, a stale id) finds nothing in the tables and
// is ignored instead of touching freed memory.
#pragma once

#include <cstdint>
#include <optional>

namespace tensorwire::tf_verbs {

enum class RdmaWriteIDType : uint8_t {
  kControlMessage = 1,    // a send of a control message; context = message slot
  kTensorWrite = 2,       // a write-with-imm of tensor content; context = response id
  kTensorProtoWrite = 3,  // a write-with-imm of a serialized string tensor; context = response id
  kRingReceive = 4,       // a posted receive of the control ring; context = ring slot
};

const char* write_id_type_name(RdmaWriteIDType type);

struct RdmaWriteID {
  static constexpr uint64_t kContextBits = 56;
  static constexpr uint64_t kMaxContext = (uint64_t{1} << kContextBits) - 1;

  RdmaWriteIDType type = RdmaWriteIDType::kControlMessage;
  uint64_t context = 0;  // <= kMaxContext

  uint64_t encode() const;
  // nullopt for ids this protocol never produces (another user of the NIC, garbage).
  static std::optional<RdmaWriteID> decode(uint64_t wr_id);

  friend bool operator==(const RdmaWriteID&, const RdmaWriteID&) = default;
};

}  // namespace tensorwire::tf_verbs
