// CommNet's eager message: the one wire format of the protocol (requests,
// tensors inline, read descriptors, READ_DONE, errors and credits), with
// encode / decode. A peer's bytes are untrusted: decode checks every field
// and answers a Status naming the field and offset, never reading past the
// input. Layout: README.md in this folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace tensorwire::oneflow {

enum class MessageType : uint8_t {
  kRequest = 1,      // receiver -> sender: the Recv of (name, step_id) was made
  kEagerTensor = 2,  // sender -> receiver: meta-data and the content inline
  kDescriptor = 3,   // sender -> receiver: meta-data, address, length, rkey, token
  kReadDone = 4,     // receiver -> sender: the last read completed, the token may go
  kError = 5,        // sender -> receiver: the Send failed or its step aborted
  kCredit = 6,       // either way: receives re-posted, credits returned (nothing else)
};
inline constexpr size_t kMessageTypes = 6;
const char* message_type_name(MessageType type);
inline size_t message_type_index(MessageType type) { return static_cast<size_t>(type) - 1; }

inline constexpr uint8_t kFormatByte = 0xC7;
inline constexpr size_t kMaxDims = 32;
inline constexpr size_t kMaxErrorMessageBytes = 256;

struct Message {
  MessageType type = MessageType::kRequest;
  uint16_t credits = 0;  // receives the writer re-posted since its last message
  std::string name;      // kRequest, kEagerTensor, kDescriptor, kError
  uint64_t step_id = 0;
  uint32_t token = 0;        // kDescriptor, kReadDone
  uint64_t remote_addr = 0;  // kDescriptor
  uint32_t rkey = 0;         // kDescriptor
  // The tensor's meta-data (kEagerTensor, kDescriptor).
  bool is_dead = false;
  DataType dtype = DataType::kFloat32;
  TensorShape shape;
  uint64_t tensor_bytes = 0;  // kEagerTensor: the inline payload's length
  StatusCode error_code = StatusCode::kOk;  // kError: not kOk
  std::string error_message;
};

bool carries_tensor(MessageType type);
bool carries_name(MessageType type);

// Bytes of the header (everything but an eager tensor's inline content).
size_t header_size(const Message& m);
// The largest header: the receive slot holds it plus eager_max_bytes.
size_t max_header_size();

// The header; an eager tensor's content follows it (tensor_bytes bytes),
// written by the caller. kInvalidArgument for a message decode would refuse.
Result<std::vector<std::byte>> encode_header(const Message& m);

struct Decoded {
  Message message;
  size_t payload_offset = 0;  // where an eager tensor's content starts
};
// The whole received message: header, then exactly tensor_bytes of content
// for kEagerTensor and nothing after the header otherwise.
Result<Decoded> decode(std::span<const std::byte> bytes);

}  // namespace tensorwire::oneflow
