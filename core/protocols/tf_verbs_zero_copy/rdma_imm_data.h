// Immediate values of RDMA writes-with-immediate (RdmaImmDataType).
//
// A tensor content write carries the receiver's request_index as its 32-bit
// immediate: that is how the receiver learns which RdmaTensorRequest finished
// (no data travels with the tensor). The top of the 32-bit range is reserved:
// the original design used fixed immediates for ACK writes and control-message
// writes. In this (phase 2) protocol there is no ACK buffer and control
// messages travel as sends into the peer's receive ring (their completion
// opcode is kRecv, not kRecvRdmaWithImm), so neither fixed value is ever sent;
// they stay reserved so that a request_index can never be mistaken for them.
// A write-with-imm that carries a reserved value, or a request_index that names
// no outstanding request, is a protocol error: counted and ignored, never UB.
#pragma once

#include <cstdint>

namespace tensorwire::tf_verbs {

enum RdmaImmDataType : uint32_t {
  kMaxRequestId = 0xFFFFFFFDu,  // request_index values are in [0, kMaxRequestId]
  kAck = 0xFFFFFFFEu,           // reserved (the phase-1 ACK buffer, removed in phase 2)
  kMessage = 0xFFFFFFFFu,       // reserved (control messages are sends, not writes)
};

// True for immediates that can never name a request.
constexpr bool is_reserved_imm(uint32_t imm) { return imm > kMaxRequestId; }

}  // namespace tensorwire::tf_verbs
