// MVAPICH2-GPU's control message: the one wire format of the protocol
// (REQUEST, EAGER, RTS, CTS, FIN, ERROR, CREDIT), with encode / decode. A
// peer's bytes are untrusted: decode checks every field and answers a Status
// naming the field and byte offset, never reading past the input. Layout:
// README.md in this folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace tensorwire::mvapich2 {

enum class MessageType : uint8_t {
  kRequest = 1,  // receiver -> sender: the Recv of (name, step_id) was made
  kEager = 2,    // sender -> receiver: meta-data and the content in the message
  kRts = 3,      // sender -> receiver: request to send (tag, size, type), a transfer id
  kCts = 4,      // receiver -> sender: clear to send: where blocks go
  kFin = 5,      // sender -> receiver: "RDMA write finished" for one block
  kError = 6,    // sender -> receiver: the Send failed or its step aborted
  kCredit = 7,   // either way: receives re-posted, credits returned (nothing else)
};
inline constexpr size_t kMessageTypes = 7;
const char* message_type_name(MessageType type);
inline size_t message_type_index(MessageType type) { return static_cast<size_t>(type) - 1; }

inline constexpr uint8_t kFormatByte = 0xA2;
inline constexpr size_t kMaxDims = 32;
inline constexpr size_t kMaxErrorMessageBytes = 256;
inline constexpr size_t kMaxCtsAddrs = 64;

struct Message {
  MessageType type = MessageType::kRequest;
  uint16_t credits = 0;  // receives the writer re-posted since its last message
  std::string name;      // kRequest, kEager, kRts, kError
  uint64_t step_id = 0;
  uint32_t transfer = 0;  // kRts, kCts, kFin (kError: may): the sender's transfer id (from 1)
  uint32_t block = 0;     // kCts: the block addrs[0] is for; kFin: the block written
  // kRts: the source is staged through host vbufs (a GPU the NIC cannot
  // reach). kCts: addrs[0] is the user's buffer, block k lands at
  // addrs[0] + k * block_bytes (otherwise block + i lands in vbuf addrs[i]).
  // kError with a transfer: set, the sender ends its transfer; clear, the
  // receiver refuses (or ends) the sender's transfer.
  bool flag = false;
  uint64_t block_bytes = 0;  // kCts: the pipeline unit the receiver chose
  uint32_t rkey = 0;         // kCts
  std::vector<uint64_t> addrs;  // kCts: 1..kMaxCtsAddrs (exactly 1 when flag)
  // The tensor's meta-data (kEager, kRts).
  bool is_dead = false;
  DataType dtype = DataType::kFloat32;
  TensorShape shape;
  uint64_t tensor_bytes = 0;  // kEager: the inline payload's length; kRts: above 0
  StatusCode error_code = StatusCode::kOk;  // kError: not kOk
  std::string error_message;
};

bool carries_tensor(MessageType type);
bool carries_name(MessageType type);

// Bytes of the header (everything but an eager tensor's content).
size_t header_size(const Message& m);
// The largest header: a receive slot holds it plus eager_max_bytes.
size_t max_header_size();

// The header; an eager tensor's content follows it (tensor_bytes bytes),
// written by the caller. kInvalidArgument for a message decode would refuse.
Result<std::vector<std::byte>> encode_header(const Message& m);

struct Decoded {
  Message message;
  size_t payload_offset = 0;  // where an eager tensor's content starts
};
// The whole received message: header, then exactly tensor_bytes of content
// for kEager and nothing after the header otherwise.
Result<Decoded> decode(std::span<const std::byte> bytes);

}  // namespace tensorwire::mvapich2
