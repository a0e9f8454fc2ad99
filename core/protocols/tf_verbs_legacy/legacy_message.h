// The legacy verbs protocol's control message (seed 004's RdmaMessage): the
// six RDMA_MESSAGE_* types in the seed's packet layout, type, name_size,
// name, step_id, buffer_size, remote_addr, rkey, is_dead, data_type,
// tensor_shape, tensor_bytes, then (TENSOR_WRITE) the tensor bytes, which
// live in the tensor buffer's content block. Little-endian, byte by byte;
// the name and the shape are length-prefixed (README.md has the offsets).
//
// A seventh type, RDMA_MESSAGE_ERROR, is the harness's extension, not the
// seed's: the seed's six carry no error, so a failed Send left the peer's
// Recv waiting forever. ERROR names the transfer (name, step_id) and appends
// error_code, error_size and the error text after tensor_bytes; the six
// seed types keep the seed's layout byte for byte.
//
// The bytes come from a peer's RDMA write: untrusted. decode() checks every
// field, answers kMalformedMessage naming the field and byte offset, never
// reads past its input and refuses trailing bytes; encode() applies the same
// rules, so the encoding is canonical.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace tensorwire::tf_legacy {

enum class RdmaMessageType : uint8_t {
  kAck = 1,             // RDMA_MESSAGE_ACK: the peer's message buffer may be rewritten
  kBufferIdle = 2,      // RDMA_MESSAGE_BUFFER_IDLE: the receiver copied a tensor out
  kBufferRequest = 3,   // RDMA_MESSAGE_BUFFER_REQUEST: sender asks for a tensor buffer
  kBufferResponse = 4,  // RDMA_MESSAGE_BUFFER_RESPONSE: receiver's tensor buffer address
  kTensorRequest = 5,   // RDMA_MESSAGE_TENSOR_REQUEST: a Recv asks for (name, step_id)
  kTensorWrite = 6,     // RDMA_MESSAGE_TENSOR_WRITE: the header of a tensor buffer's write
  kError = 7,           // RDMA_MESSAGE_ERROR (harness extension): the transfer failed on the sender
};
inline constexpr size_t kMessageTypes = 7;
inline size_t message_type_index(RdmaMessageType t) { return static_cast<size_t>(t) - 1; }
// "RDMA_MESSAGE_ACK", ...; "UNKNOWN" outside the enum.
const char* message_type_name(RdmaMessageType type);

inline constexpr size_t kMaxDims = 32;
// An ERROR's text is cut to this many bytes, so every message fits its buffer.
inline constexpr size_t kMaxErrorTextBytes = 160;

struct RdmaMessage {
  RdmaMessageType type = RdmaMessageType::kAck;
  std::string name;          // all but ACK: 1..kMaxTensorNameBytes bytes
  uint64_t step_id = 0;      // BUFFER_REQUEST/RESPONSE, TENSOR_REQUEST/WRITE
  uint64_t buffer_size = 0;  // BUFFER_REQUEST/RESPONSE: content bytes; TENSOR_WRITE: bytes written
  uint64_t remote_addr = 0;  // BUFFER_REQUEST/RESPONSE: the writer's tensor buffer
  uint32_t rkey = 0;
  // The tensor's meta-data (BUFFER_REQUEST/RESPONSE and TENSOR_WRITE).
  bool is_dead = false;
  DataType data_type = DataType::kFloat32;
  TensorShape tensor_shape;
  uint64_t tensor_bytes = 0;  // elements x element size; 0 when dead
  // ERROR only: why the transfer failed (a StatusCode other than kOk).
  StatusCode error_code = StatusCode::kOk;
  std::string error_text;  // 0..kMaxErrorTextBytes bytes

  friend bool operator==(const RdmaMessage&, const RdmaMessage&) = default;
};

bool carries_meta_data(RdmaMessageType type);
size_t encoded_size(const RdmaMessage& m);
// The longest valid message: what a message buffer (and a header slot) holds.
size_t max_encoded_size();
// ok, or kInvalidArgument naming the field decode() would refuse.
Status validate(const RdmaMessage& m);
Result<std::vector<std::byte>> encode(const RdmaMessage& m);
// The length of the message `in` starts with, from its name_size and
// num_dims, and for an ERROR its error_size too (a tensor write's header sits
// in a slot longer than itself); kMalformedMessage when those bytes are
// missing or out of range, or the length runs past the end of `in`.
Result<size_t> framed_size(std::span<const std::byte> in);
// Exactly one message spanning all of `in`.
Result<RdmaMessage> decode(std::span<const std::byte> in);

}  // namespace tensorwire::tf_legacy
