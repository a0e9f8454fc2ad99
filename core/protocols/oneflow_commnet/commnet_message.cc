#include "core/protocols/oneflow_commnet/commnet_message.h"

#include <limits>
#include <optional>

#include "core/assert.h"

namespace tensorwire::oneflow {
namespace {

constexpr size_t kFixedHeaderBytes = 44;  // every field but name, dims and error text
constexpr uint8_t kLastStatusCode = static_cast<uint8_t>(StatusCode::kResourceLimit);

// Where each field after the name starts: the layout is fixed once the
// name's and the dims' sizes are known, so encode and decode name the same
// offsets in their errors.
struct Offsets {
  size_t step_id, token, remote_addr, rkey, is_dead, dtype, num_dims, dims, tensor_bytes,
      error_code, error_size, error_message;
};

Offsets offsets_for(size_t name_bytes, size_t dims) {
  Offsets o{};
  o.step_id = 6 + name_bytes;
  o.token = o.step_id + 8;
  o.remote_addr = o.token + 4;
  o.rkey = o.remote_addr + 8;
  o.is_dead = o.rkey + 4;
  o.dtype = o.is_dead + 1;
  o.num_dims = o.dtype + 1;
  o.dims = o.num_dims + 1;
  o.tensor_bytes = o.dims + 8 * dims;
  o.error_code = o.tensor_bytes + 8;
  o.error_size = o.error_code + 1;
  o.error_message = o.error_size + 2;
  return o;
}

Status bad(const char* field, size_t offset, const std::string& why) {
  return Status(StatusCode::kMalformedMessage, std::string("commnet message: ") + field +
                                                   " at byte " + std::to_string(offset) + ": " +
                                                   why);
}

class Writer {
 public:
  explicit Writer(std::vector<std::byte>& out) : out_(out) {}
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
  }
  void text(const std::string& s) {
    for (char c : s) out_.push_back(static_cast<std::byte>(c));
  }

 private:
  std::vector<std::byte>& out_;
};

// Reads untrusted bytes; a read past the end answers nullopt and records
// which field it was.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  size_t offset() const { return pos_; }
  size_t remaining() const { return in_.size() - pos_; }
  const Status& error() const { return error_; }
  std::optional<uint64_t> le(const char* field, size_t n) {
    TW_ASSERT_MSG(n <= 8, "fields are at most 64 bits");
    if (!take(field, n)) return std::nullopt;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(in_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  std::optional<std::string> text(const char* field, size_t n) {
    if (!take(field, n)) return std::nullopt;
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(in_[pos_ + i]);
    pos_ += n;
    return s;
  }

 private:
  // Sticky: after one failed read every later one fails too.
  bool take(const char* field, size_t n) {
    if (error_.is_ok() && n <= remaining()) return true;
    if (error_.is_ok()) {
      error_ = bad(field, pos_, "needs " + std::to_string(n) + " bytes, " +
                                    std::to_string(remaining()) + " left");
    }
    return false;
  }
  std::span<const std::byte> in_;
  size_t pos_ = 0;
  Status error_;
};

// The meta-data rules of a message that carries a tensor.
Status check_tensor(const Message& m, const Offsets& o) {
  if (!is_valid_data_type(static_cast<uint8_t>(m.dtype)) || !is_dma_able(m.dtype)) {
    return bad("dtype", o.dtype, "not a numeric DataType (strings are not carried)");
  }
  if (m.shape.dims.size() > kMaxDims) {
    return bad("num_dims", o.num_dims, "more than " + std::to_string(kMaxDims));
  }
  for (size_t i = 0; i < m.shape.dims.size(); ++i) {
    if (m.shape.dims[i] < 0) return bad("dims", o.dims + 8 * i, "negative");
  }
  const std::optional<uint64_t> elements = m.shape.num_elements();
  const uint64_t size = data_type_size(m.dtype);
  if (!elements || *elements > std::numeric_limits<uint64_t>::max() / size) {
    return bad("dims", o.dims, "the byte count does not fit in 64 bits");
  }
  const uint64_t expected = m.is_dead ? 0 : *elements * size;
  if (m.tensor_bytes != expected) {
    return bad("tensor_bytes", o.tensor_bytes, std::to_string(m.tensor_bytes) + ", expected " +
                                                   std::to_string(expected));
  }
  if (m.type == MessageType::kDescriptor) {
    if (m.is_dead || m.tensor_bytes == 0) {
      return bad("tensor_bytes", o.tensor_bytes, "a descriptor names content to read");
    }
    if (m.remote_addr > std::numeric_limits<uint64_t>::max() - m.tensor_bytes) {
      return bad("remote_addr", o.remote_addr, "the range wraps around");
    }
  }
  return {};
}

// Fields a type does not use must be zero: one encoding per message.
Status check_unused(const Message& m, const Offsets& o) {
  const bool tensor = carries_tensor(m.type);
  if (!carries_name(m.type) && m.step_id != 0) return bad("step_id", o.step_id, "must be 0");
  const bool has_token = m.type == MessageType::kDescriptor || m.type == MessageType::kReadDone;
  if (!has_token && m.token != 0) return bad("token", o.token, "must be 0");
  if (m.type != MessageType::kDescriptor && (m.remote_addr != 0 || m.rkey != 0)) {
    return bad("remote_addr", o.remote_addr, "only a descriptor names remote memory");
  }
  // (dtype is written as 0 where there is no tensor; decode checks that byte.)
  if (!tensor && (m.is_dead || m.tensor_bytes != 0 || !m.shape.dims.empty())) {
    return bad("dtype", o.dtype, "only tensors and descriptors carry meta-data");
  }
  if (m.type != MessageType::kError && (m.error_code != StatusCode::kOk || !m.error_message.empty())) {
    return bad("error_code", o.error_code, "only an error message carries one");
  }
  return {};
}

Status check(const Message& m) {
  const Offsets o = offsets_for(m.name.size(), m.shape.dims.size());
  const auto type = static_cast<uint8_t>(m.type);
  if (type < 1 || type > kMessageTypes) return bad("type", 1, "unknown " + std::to_string(type));
  if (carries_name(m.type) && (m.name.empty() || m.name.size() > kMaxTensorNameBytes)) {
    return bad("name_size", 4, "must be 1.." + std::to_string(kMaxTensorNameBytes));
  }
  if (!carries_name(m.type) && !m.name.empty()) return bad("name_size", 4, "must be 0");
  if (Status s = check_unused(m, o); !s.is_ok()) return s;
  if (carries_tensor(m.type)) {
    if (Status s = check_tensor(m, o); !s.is_ok()) return s;
  }
  if (m.type == MessageType::kError) {
    const auto code = static_cast<uint8_t>(m.error_code);
    if (code == 0 || code > kLastStatusCode) return bad("error_code", o.error_code, "not an error");
  }
  if (m.error_message.size() > kMaxErrorMessageBytes) {
    return bad("error_message_size", o.error_size,
               "more than " + std::to_string(kMaxErrorMessageBytes));
  }
  return {};
}

// Reads the fields from the dims on into `m`.
bool read_tail(Reader& r, Message& m) {
  const auto num_dims = r.le("num_dims", 1);
  if (!num_dims) return false;
  if (*num_dims > kMaxDims) return false;
  for (uint64_t i = 0; i < *num_dims; ++i) {
    const auto d = r.le("dims", 8);
    if (!d) return false;
    m.shape.dims.push_back(static_cast<int64_t>(*d));
  }
  const auto bytes = r.le("tensor_bytes", 8);
  const auto code = r.le("error_code", 1);
  const auto size = r.le("error_message_size", 2);
  if (!bytes || !code || !size) return false;
  m.tensor_bytes = *bytes;
  m.error_code = static_cast<StatusCode>(*code);
  if (*code > kLastStatusCode) return false;
  if (*size > kMaxErrorMessageBytes) return false;
  const auto text = r.text("error_message", *size);
  if (!text) return false;
  m.error_message = *text;
  return true;
}

// Fields with a range the struct cannot hold are refused as they are read.
Status range_error(const Message& m, std::span<const std::byte> bytes, const Offsets& o) {
  if (o.num_dims < bytes.size() && static_cast<uint8_t>(bytes[o.num_dims]) > kMaxDims) {
    return bad("num_dims", o.num_dims, "more than " + std::to_string(kMaxDims));
  }
  const size_t ec = offsets_for(m.name.size(), m.shape.dims.size()).error_code;
  if (ec < bytes.size() && static_cast<uint8_t>(bytes[ec]) > kLastStatusCode) {
    return bad("error_code", ec, "not a StatusCode");
  }
  const size_t es = ec + 1;
  if (es + 1 < bytes.size() &&
      (static_cast<size_t>(bytes[es]) | static_cast<size_t>(bytes[es + 1]) << 8) >
          kMaxErrorMessageBytes) {
    return bad("error_message_size", es, "more than " + std::to_string(kMaxErrorMessageBytes));
  }
  return {};
}

}  // namespace

const char* message_type_name(MessageType type) {
  switch (type) {
    case MessageType::kRequest: return "REQUEST";
    case MessageType::kEagerTensor: return "EAGER_TENSOR";
    case MessageType::kDescriptor: return "DESCRIPTOR";
    case MessageType::kReadDone: return "READ_DONE";
    case MessageType::kError: return "ERROR";
    case MessageType::kCredit: return "CREDIT";
  }
  return "?";
}

bool carries_tensor(MessageType type) {
  return type == MessageType::kEagerTensor || type == MessageType::kDescriptor;
}
bool carries_name(MessageType type) {
  return type == MessageType::kRequest || carries_tensor(type) || type == MessageType::kError;
}

size_t header_size(const Message& m) {
  return kFixedHeaderBytes + m.name.size() + 8 * m.shape.dims.size() + m.error_message.size();
}

size_t max_header_size() {
  return kFixedHeaderBytes + kMaxTensorNameBytes + 8 * kMaxDims + kMaxErrorMessageBytes;
}

Result<std::vector<std::byte>> encode_header(const Message& m) {
  if (Status s = check(m); !s.is_ok()) return Status(StatusCode::kInvalidArgument, s.message());
  std::vector<std::byte> out;
  out.reserve(header_size(m));
  Writer w(out);
  w.le(kFormatByte, 1);
  w.le(static_cast<uint8_t>(m.type), 1);
  w.le(m.credits, 2);
  w.le(m.name.size(), 2);
  w.text(m.name);
  w.le(m.step_id, 8);
  w.le(m.token, 4);
  w.le(m.remote_addr, 8);
  w.le(m.rkey, 4);
  w.le(m.is_dead ? 1 : 0, 1);
  w.le(carries_tensor(m.type) ? static_cast<uint8_t>(m.dtype) : 0, 1);
  w.le(m.shape.dims.size(), 1);
  for (int64_t d : m.shape.dims) w.le(static_cast<uint64_t>(d), 8);
  w.le(m.tensor_bytes, 8);
  w.le(static_cast<uint8_t>(m.error_code), 1);
  w.le(m.error_message.size(), 2);
  w.text(m.error_message);
  TW_ASSERT(out.size() == header_size(m));
  return out;
}

Result<Decoded> decode(std::span<const std::byte> bytes) {
  Reader r(bytes);
  Decoded d;
  Message& m = d.message;
  const auto format = r.le("format", 1);
  if (format && *format != kFormatByte) return bad("format", 0, "not a CommNet message");
  const auto type = r.le("type", 1);
  const auto credits = r.le("credits", 2);
  const auto name_size = r.le("name_size", 2);
  if (!name_size) return r.error();
  if (*name_size > kMaxTensorNameBytes) return bad("name_size", 4, "longer than the longest name");
  const auto name = r.text("name", *name_size);
  const auto step = r.le("step_id", 8);
  const auto token = r.le("token", 4);
  const auto addr = r.le("remote_addr", 8);
  const auto rkey = r.le("rkey", 4);
  const auto dead = r.le("is_dead", 1);
  const auto dtype = r.le("dtype", 1);
  if (!dtype) return r.error();
  if (*dead > 1) return bad("is_dead", r.offset() - 2, "must be 0 or 1");
  m.type = static_cast<MessageType>(*type);
  m.credits = static_cast<uint16_t>(*credits);
  m.name = *name;
  m.step_id = *step;
  m.token = static_cast<uint32_t>(*token);
  m.remote_addr = *addr;
  m.rkey = static_cast<uint32_t>(*rkey);
  m.is_dead = *dead == 1;
  if (*type >= 1 && *type <= kMessageTypes && !carries_tensor(m.type) && *dtype != 0) {
    return bad("dtype", r.offset() - 1, "must be 0: only tensors and descriptors carry meta-data");
  }
  if (carries_tensor(m.type)) m.dtype = static_cast<DataType>(*dtype);
  if (!read_tail(r, m)) {
    Status range = range_error(m, bytes, offsets_for(m.name.size(), m.shape.dims.size()));
    return range.is_ok() ? r.error() : range;
  }
  if (Status s = check(m); !s.is_ok()) return s;
  d.payload_offset = r.offset();
  TW_ASSERT(d.payload_offset == header_size(m));
  const uint64_t payload = m.type == MessageType::kEagerTensor ? m.tensor_bytes : 0;
  if (r.remaining() != payload) {
    return bad("content", r.offset(), std::to_string(r.remaining()) + " bytes follow the header, " +
                                          std::to_string(payload) + " expected");
  }
  return d;
}

}  // namespace tensorwire::oneflow
