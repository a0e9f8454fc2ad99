#include "core/protocols/tf_verbs_legacy/legacy_message.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "core/assert.h"

namespace tensorwire::tf_legacy {
namespace {

constexpr size_t kFixedBytes = 42;  // every field but the name and the dims
constexpr size_t kErrorFixedBytes = 3;  // ERROR's error_code and error_size
constexpr auto kLastStatusCode = static_cast<uint8_t>(StatusCode::kResourceLimit);

// Where each field after the name starts, so encode and decode name the same
// offsets in their errors.
struct Offsets {
  size_t step_id, buffer_size, remote_addr, rkey, is_dead, data_type, num_dims, dims,
      tensor_bytes, end;
  // ERROR only, after the seed's fields (`end` is where they end).
  size_t error_code, error_size, error_text;
};

Offsets offsets_for(size_t name_bytes, size_t dims) {
  Offsets o{};
  o.step_id = 3 + name_bytes;
  o.buffer_size = o.step_id + 8;
  o.remote_addr = o.buffer_size + 8;
  o.rkey = o.remote_addr + 8;
  o.is_dead = o.rkey + 4;
  o.data_type = o.is_dead + 1;
  o.num_dims = o.data_type + 1;
  o.dims = o.num_dims + 1;
  o.tensor_bytes = o.dims + 8 * dims;
  o.end = o.tensor_bytes + 8;
  o.error_code = o.end;
  o.error_size = o.error_code + 1;
  o.error_text = o.error_size + 2;
  static_assert(kFixedBytes == 3 + 8 + 8 + 8 + 4 + 1 + 1 + 1 + 8);
  return o;
}

Status bad(StatusCode code, const char* field, size_t offset, const std::string& why) {
  return Status(code, std::string("legacy verbs message: ") + field + " at byte " +
                          std::to_string(offset) + ": " + why);
}

bool carries_name(RdmaMessageType t) { return t != RdmaMessageType::kAck; }
bool carries_step(RdmaMessageType t) {
  return t != RdmaMessageType::kAck && t != RdmaMessageType::kBufferIdle;
}
bool carries_buffer(RdmaMessageType t) {
  return t == RdmaMessageType::kBufferRequest || t == RdmaMessageType::kBufferResponse;
}

Status check_meta_data(const RdmaMessage& m, const Offsets& o, StatusCode code) {
  if (!is_valid_data_type(static_cast<uint8_t>(m.data_type)) || !is_dma_able(m.data_type)) {
    return bad(code, "data_type", o.data_type, "not a numeric DataType (strings are not carried)");
  }
  if (m.tensor_shape.dims.size() > kMaxDims) {
    return bad(code, "num_dims", o.num_dims, "more than " + std::to_string(kMaxDims));
  }
  for (size_t i = 0; i < m.tensor_shape.dims.size(); ++i) {
    if (m.tensor_shape.dims[i] < 0) return bad(code, "tensor_shape", o.dims + 8 * i, "negative");
  }
  const std::optional<uint64_t> elements = m.tensor_shape.num_elements();
  const uint64_t size = data_type_size(m.data_type);
  if (!elements || *elements > std::numeric_limits<uint64_t>::max() / size) {
    return bad(code, "tensor_shape", o.dims, "the byte count does not fit in 64 bits");
  }
  const uint64_t expected = m.is_dead ? 0 : *elements * size;
  if (m.tensor_bytes != expected) {
    return bad(code, "tensor_bytes", o.tensor_bytes,
               std::to_string(m.tensor_bytes) + ", expected " + std::to_string(expected));
  }
  return {};
}

// Fields a type does not use must be zero: one encoding per message.
Status check_unused(const RdmaMessage& m, const Offsets& o, StatusCode code) {
  if (!carries_step(m.type) && m.step_id != 0) return bad(code, "step_id", o.step_id, "must be 0");
  if (!carries_buffer(m.type) && (m.remote_addr != 0 || m.rkey != 0)) {
    return bad(code, "remote_addr", o.remote_addr, "only buffer messages name remote memory");
  }
  if (!carries_buffer(m.type) && m.type != RdmaMessageType::kTensorWrite && m.buffer_size != 0) {
    return bad(code, "buffer_size", o.buffer_size, "must be 0");
  }
  if (!carries_meta_data(m.type) &&
      (m.is_dead || m.tensor_bytes != 0 || !m.tensor_shape.dims.empty())) {
    return bad(code, "is_dead", o.is_dead, "only buffer and write messages carry meta-data");
  }
  return {};
}

// ERROR carries a real error and a bounded text; the seed's six carry none.
Status check_error(const RdmaMessage& m, const Offsets& o, StatusCode code) {
  if (m.type != RdmaMessageType::kError) {
    if (m.error_code != StatusCode::kOk || !m.error_text.empty()) {
      return bad(code, "error_code", o.error_code, "only an ERROR carries one");
    }
    return {};
  }
  const auto error = static_cast<uint8_t>(m.error_code);
  if (error == 0 || error > kLastStatusCode) {
    return bad(code, "error_code", o.error_code, "not an error StatusCode: " + std::to_string(error));
  }
  if (m.error_text.size() > kMaxErrorTextBytes) {
    return bad(code, "error_size", o.error_size, "more than " + std::to_string(kMaxErrorTextBytes));
  }
  return {};
}

Status check_sizes(const RdmaMessage& m, const Offsets& o, StatusCode code) {
  if (carries_buffer(m.type)) {
    if (m.buffer_size < m.tensor_bytes) {
      return bad(code, "buffer_size", o.buffer_size, "smaller than tensor_bytes");
    }
    if (m.remote_addr > std::numeric_limits<uint64_t>::max() - m.buffer_size) {
      return bad(code, "remote_addr", o.remote_addr, "the range wraps around");
    }
  }
  if (m.type == RdmaMessageType::kTensorWrite && m.buffer_size != m.tensor_bytes) {
    return bad(code, "buffer_size", o.buffer_size, "a write carries exactly tensor_bytes");
  }
  return {};
}

Status check(const RdmaMessage& m, StatusCode code) {
  const Offsets o = offsets_for(m.name.size(), m.tensor_shape.dims.size());
  const auto type = static_cast<uint8_t>(m.type);
  if (type < 1 || type > kMessageTypes) return bad(code, "type", 0, "unknown " + std::to_string(type));
  if (carries_name(m.type) && (m.name.empty() || m.name.size() > kMaxTensorNameBytes)) {
    return bad(code, "name_size", 1, "must be 1.." + std::to_string(kMaxTensorNameBytes));
  }
  if (!carries_name(m.type) && !m.name.empty()) return bad(code, "name_size", 1, "must be 0");
  if (Status s = check_unused(m, o, code); !s.is_ok()) return s;
  if (Status s = check_error(m, o, code); !s.is_ok()) return s;
  if (carries_meta_data(m.type)) {
    if (Status s = check_meta_data(m, o, code); !s.is_ok()) return s;
  }
  return check_sizes(m, o, code);
}

void put(std::vector<std::byte>& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}

// Reads untrusted bytes; a read past the end answers nullopt and records
// which field it was (sticky: every later read fails too).
class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  size_t offset() const { return pos_; }
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
  void fail(Status s) {
    if (error_.is_ok()) error_ = std::move(s);
  }

 private:
  bool take(const char* field, size_t n) {
    if (error_.is_ok() && n <= in_.size() - pos_) return true;
    fail(bad(StatusCode::kMalformedMessage, field, pos_,
             "needs " + std::to_string(n) + " bytes, " + std::to_string(in_.size() - pos_) +
                 " left"));
    return false;
  }
  std::span<const std::byte> in_;
  size_t pos_ = 0;
  Status error_;
};

// ERROR's extension: error_code, error_size, then the text.
bool read_error(Reader& r, RdmaMessage& m) {
  const auto code = r.le("error_code", 1);
  const size_t size_at = r.offset();
  const auto size = r.le("error_size", 2);
  if (!code || !size) return false;
  if (*size > kMaxErrorTextBytes) {
    r.fail(bad(StatusCode::kMalformedMessage, "error_size", size_at,
               "more than " + std::to_string(kMaxErrorTextBytes)));
    return false;
  }
  const auto text = r.text("error_text", *size);
  if (!text) return false;
  // Range-checked by check() (a code past the enum is refused there).
  m.error_code = static_cast<StatusCode>(*code);
  m.error_text = *text;
  return true;
}

// The bytes a struct cannot hold faithfully are refused as they are read.
bool read_raw(Reader& r, RdmaMessage& m, uint8_t& raw_type, uint8_t& raw_dtype) {
  const auto type = r.le("type", 1);
  const auto name_size = r.le("name_size", 2);
  if (!type || !name_size) return false;
  raw_type = static_cast<uint8_t>(*type);
  m.type = static_cast<RdmaMessageType>(*type);
  if (*name_size > kMaxTensorNameBytes) {
    r.fail(bad(StatusCode::kMalformedMessage, "name_size", 1,
               "more than " + std::to_string(kMaxTensorNameBytes)));
    return false;
  }
  const auto name = r.text("name", *name_size);
  const auto step = r.le("step_id", 8);
  const auto buffer_size = r.le("buffer_size", 8);
  const auto addr = r.le("remote_addr", 8);
  const auto rkey = r.le("rkey", 4);
  const size_t dead_at = r.offset();
  const auto dead = r.le("is_dead", 1);
  const auto dtype = r.le("data_type", 1);
  const size_t dims_at = r.offset();
  const auto num_dims = r.le("num_dims", 1);
  if (!num_dims) return false;
  if (*dead > 1) r.fail(bad(StatusCode::kMalformedMessage, "is_dead", dead_at, "not 0 or 1"));
  if (*num_dims > kMaxDims) {
    r.fail(bad(StatusCode::kMalformedMessage, "num_dims", dims_at,
               "more than " + std::to_string(kMaxDims)));
  }
  if (!r.error().is_ok()) return false;
  m.name = *name;
  m.step_id = *step;
  m.buffer_size = *buffer_size;
  m.remote_addr = *addr;
  m.rkey = static_cast<uint32_t>(*rkey);
  m.is_dead = *dead == 1;
  raw_dtype = static_cast<uint8_t>(*dtype);
  m.data_type = static_cast<DataType>(*dtype);
  for (uint64_t i = 0; i < *num_dims; ++i) {
    const auto d = r.le("tensor_shape", 8);
    if (!d) return false;
    m.tensor_shape.dims.push_back(static_cast<int64_t>(*d));
  }
  const auto bytes = r.le("tensor_bytes", 8);
  if (!bytes) return false;
  m.tensor_bytes = *bytes;
  return raw_type != static_cast<uint8_t>(RdmaMessageType::kError) || read_error(r, m);
}

// An ERROR's length runs on past the seed's fields: its error_size says by
// how much (framed_size must not stop at tensor_bytes, or the text and its
// size would be left out of the frame).
Result<size_t> framed_error_size(std::span<const std::byte> in, const Offsets& o) {
  if (in.size() < o.error_text) {
    return bad(StatusCode::kMalformedMessage, "error_size", o.error_size, "missing");
  }
  const size_t text = static_cast<size_t>(in[o.error_size]) |
                      static_cast<size_t>(in[o.error_size + 1]) << 8;
  if (text > kMaxErrorTextBytes) {
    return bad(StatusCode::kMalformedMessage, "error_size", o.error_size,
               "more than " + std::to_string(kMaxErrorTextBytes));
  }
  if (o.error_text + text > in.size()) {
    return bad(StatusCode::kMalformedMessage, "error_text", in.size(), "past the end of the slot");
  }
  return o.error_text + text;
}

}  // namespace

const char* message_type_name(RdmaMessageType type) {
  switch (type) {
    case RdmaMessageType::kAck: return "RDMA_MESSAGE_ACK";
    case RdmaMessageType::kBufferIdle: return "RDMA_MESSAGE_BUFFER_IDLE";
    case RdmaMessageType::kBufferRequest: return "RDMA_MESSAGE_BUFFER_REQUEST";
    case RdmaMessageType::kBufferResponse: return "RDMA_MESSAGE_BUFFER_RESPONSE";
    case RdmaMessageType::kTensorRequest: return "RDMA_MESSAGE_TENSOR_REQUEST";
    case RdmaMessageType::kTensorWrite: return "RDMA_MESSAGE_TENSOR_WRITE";
    case RdmaMessageType::kError: return "RDMA_MESSAGE_ERROR";
  }
  return "UNKNOWN";
}

bool carries_meta_data(RdmaMessageType t) {
  return carries_buffer(t) || t == RdmaMessageType::kTensorWrite;
}

size_t encoded_size(const RdmaMessage& m) {
  const size_t error = m.type == RdmaMessageType::kError ? kErrorFixedBytes + m.error_text.size() : 0;
  return kFixedBytes + m.name.size() + 8 * m.tensor_shape.dims.size() + error;
}

size_t max_encoded_size() {
  return kFixedBytes + kMaxTensorNameBytes +
         std::max(8 * kMaxDims, kErrorFixedBytes + kMaxErrorTextBytes);
}

Status validate(const RdmaMessage& m) { return check(m, StatusCode::kInvalidArgument); }

Result<std::vector<std::byte>> encode(const RdmaMessage& m) {
  if (Status s = validate(m); !s.is_ok()) return s;
  std::vector<std::byte> out;
  out.reserve(encoded_size(m));
  put(out, static_cast<uint8_t>(m.type), 1);
  put(out, m.name.size(), 2);
  for (char c : m.name) out.push_back(static_cast<std::byte>(c));
  put(out, m.step_id, 8);
  put(out, m.buffer_size, 8);
  put(out, m.remote_addr, 8);
  put(out, m.rkey, 4);
  put(out, m.is_dead ? 1 : 0, 1);
  put(out, carries_meta_data(m.type) ? static_cast<uint8_t>(m.data_type) : 0, 1);
  put(out, m.tensor_shape.dims.size(), 1);
  for (int64_t d : m.tensor_shape.dims) put(out, static_cast<uint64_t>(d), 8);
  put(out, m.tensor_bytes, 8);
  if (m.type == RdmaMessageType::kError) {
    put(out, static_cast<uint8_t>(m.error_code), 1);
    put(out, m.error_text.size(), 2);
    for (char c : m.error_text) out.push_back(static_cast<std::byte>(c));
  }
  TW_ASSERT(out.size() == encoded_size(m));
  return out;
}

Result<size_t> framed_size(std::span<const std::byte> in) {
  if (in.size() < 3) return bad(StatusCode::kMalformedMessage, "name_size", 1, "missing");
  const size_t name = static_cast<size_t>(in[1]) | static_cast<size_t>(in[2]) << 8;
  if (name > kMaxTensorNameBytes) {
    return bad(StatusCode::kMalformedMessage, "name_size", 1,
               "more than " + std::to_string(kMaxTensorNameBytes));
  }
  const Offsets o = offsets_for(name, 0);
  if (in.size() <= o.num_dims) return bad(StatusCode::kMalformedMessage, "num_dims", o.num_dims, "missing");
  const auto dims = static_cast<size_t>(in[o.num_dims]);
  if (dims > kMaxDims) {
    return bad(StatusCode::kMalformedMessage, "num_dims", o.num_dims,
               "more than " + std::to_string(kMaxDims));
  }
  const Offsets full = offsets_for(name, dims);
  if (full.end > in.size()) {
    return bad(StatusCode::kMalformedMessage, "tensor_bytes", in.size(), "past the end of the slot");
  }
  if (static_cast<uint8_t>(in[0]) != static_cast<uint8_t>(RdmaMessageType::kError)) return full.end;
  return framed_error_size(in, full);
}

Result<RdmaMessage> decode(std::span<const std::byte> in) {
  Reader r(in);
  RdmaMessage m;
  uint8_t raw_type = 0;
  uint8_t raw_dtype = 0;
  if (!read_raw(r, m, raw_type, raw_dtype)) return r.error();
  const Offsets o = offsets_for(m.name.size(), m.tensor_shape.dims.size());
  const size_t end = r.offset();
  TW_ASSERT(end == o.end + (m.type == RdmaMessageType::kError ? kErrorFixedBytes + m.error_text.size() : 0));
  if (end != in.size()) {
    return bad(StatusCode::kMalformedMessage,
               m.type == RdmaMessageType::kError ? "error_text" : "tensor_bytes", end,
               std::to_string(in.size() - end) + " trailing bytes");
  }
  if (raw_type < 1 || raw_type > kMessageTypes) {
    return bad(StatusCode::kMalformedMessage, "type", 0, "unknown " + std::to_string(raw_type));
  }
  if (!carries_meta_data(m.type)) {
    if (raw_dtype != 0) return bad(StatusCode::kMalformedMessage, "data_type", o.data_type, "must be 0");
    m.data_type = DataType::kFloat32;  // the struct's default: re-encodes to the same bytes
  }
  if (Status s = check(m, StatusCode::kMalformedMessage); !s.is_ok()) return s;
  return m;
}

}  // namespace tensorwire::tf_legacy
