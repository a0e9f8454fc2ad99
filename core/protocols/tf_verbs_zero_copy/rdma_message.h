// The control message of the TensorFlow verbs zero-copy protocol, and its
// byte encoding.
//
// Every control message (TENSOR_REQUEST, META_DATA_UPDATE, TENSOR_RE_REQUEST,
// ERROR_STATUS) is one RdmaMessage sent into a slot of the peer's control ring.
// The encoding is fixed little-endian, written byte by byte, with a variable
// length name, shape and error message; see core/protocols/tf_verbs_zero_copy/README.md for the layout.
//
// A peer's bytes are untrusted: decode() validates every field and returns
// kMalformedMessage naming the field and its byte offset; it never reads
// outside the input span. encode() applies the same rules (kInvalidArgument),
// so anything encode() accepts, decode() accepts and reproduces exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace tensorwire::wire {

// First byte of every message. Changes whenever the layout changes, so a peer
// speaking another layout is rejected instead of misparsed.
inline constexpr uint8_t kFormatByte = 0xA1;

// The design's RDMA_MESSAGE_* types. The values are the wire values.
enum class RdmaMessageType : uint8_t {
  kTensorRequest = 1,    // RDMA_MESSAGE_TENSOR_REQUEST   (receiver -> sender)
  kMetaDataUpdate = 2,   // RDMA_MESSAGE_META_DATA_UPDATE (sender -> receiver)
  kTensorReRequest = 3,  // RDMA_MESSAGE_TENSOR_RE_REQUEST (receiver -> sender)
  kErrorStatus = 4,      // RDMA_MESSAGE_ERROR_STATUS     (sender -> receiver)
};

// "TENSOR_REQUEST", ...; "UNKNOWN" for a value outside the enum.
const char* rdma_message_type_name(RdmaMessageType type);
bool is_valid_rdma_message_type(uint8_t raw);

// Limits of a valid message; together they bound the ring slot size.
inline constexpr size_t kMaxNameBytes = 512;  // the design's fixed name field
static_assert(kMaxNameBytes >= kMaxTensorNameBytes, "every scenario's tensor name must fit");
inline constexpr size_t kMaxDims = 32;        // rank of tensor_shape
inline constexpr size_t kMaxErrorMessageBytes = 256;

struct RdmaMessage {
  RdmaMessageType type = RdmaMessageType::kTensorRequest;
  std::string name;  // tensor name (rendezvous key); 1..kMaxNameBytes bytes
  uint64_t step_id = 0;
  uint32_t request_index = 0;  // also the immediate of the content write
  // Destination of the content write (result tensor, host proxy or proto
  // buffer). 0 in a request: no destination (first request, or withdrawal).
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  // Meta-data: the receiver's cached copy in requests, the sender's current
  // one in META_DATA_UPDATE.
  bool is_dead = false;
  DataType data_type = DataType::kFloat32;
  TensorShape tensor_shape;
  // DMA-able: elements * element size. kString: the serialized (proto) size.
  // Dead: 0.
  uint64_t tensor_bytes = 0;
  // ERROR_STATUS only (kOk elsewhere).
  StatusCode error_code = StatusCode::kOk;
  std::string error_message;  // at most kMaxErrorMessageBytes bytes

  friend bool operator==(const RdmaMessage&, const RdmaMessage&) = default;
};

// Exact encoded size of `message` (valid or not; no validation).
size_t encoded_size(const RdmaMessage& message);

// Upper bound of encoded_size() over all valid messages: the control ring slot
// size. Any message decode() accepts is at most this long.
size_t max_encoded_size();

// Checks `message` against the rules decode() enforces. ok, or
// kInvalidArgument naming the field.
Status validate(const RdmaMessage& message);

// Writes `message` into the front of `out`; returns the bytes written
// (== encoded_size(message)). kInvalidArgument if the message breaks a limit
// or rule (see validate()) or `out` is too small; nothing is guaranteed about
// `out`'s contents then.
Result<size_t> encode(const RdmaMessage& message, std::span<std::byte> out);

// Parses exactly one message spanning all of `in`. kMalformedMessage, naming
// the field and byte offset, on any violation: truncation, bad format byte,
// unknown type / data type / error code, name size 0 or over the limit, a bool
// byte other than 0/1, too many dims, a negative dim, element count or byte
// count overflow, tensor_bytes inconsistent with the shape, trailing bytes.
Result<RdmaMessage> decode(std::span<const std::byte> in);
// decode() into `out`, reusing its strings' and dims' memory: a rank decodes
// every control message it receives into one. On success `out` equals what
// decode() returns; on an error its contents are unspecified.
Status decode_into(std::span<const std::byte> in, RdmaMessage& out);

// Short human description for traces and errors:
// "TENSOR_REQUEST name=a step=3 idx=7 float32[2,3] bytes=24".
std::string to_string(const RdmaMessage& message);

}  // namespace tensorwire::wire
