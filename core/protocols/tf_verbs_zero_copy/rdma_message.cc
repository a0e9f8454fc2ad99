#include "core/protocols/tf_verbs_zero_copy/rdma_message.h"

#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/assert.h"

namespace tensorwire::wire {

namespace {

// Little-endian writer over a span the caller has sized (encode() checks the
// size first). Field by field: the layout never depends on the host's struct
// padding or byte order (a little-endian host copies a field's bytes as they
// are, any other host shifts them out one by one).
class ByteWriter {
 public:
  explicit ByteWriter(std::span<std::byte> out) : out_(out) {}
  size_t offset() const { return pos_; }
  void u8(uint8_t v) {
    TW_ASSERT(pos_ < out_.size());
    out_[pos_++] = std::byte{v};
  }
  void u16(uint16_t v) { le<2>(v); }
  void u32(uint32_t v) { le<4>(v); }
  void u64(uint64_t v) { le<8>(v); }
  void bytes(const std::string& s) {
    TW_ASSERT(s.size() <= out_.size() - pos_);
    if (!s.empty()) std::memcpy(out_.data() + pos_, s.data(), s.size());
    pos_ += s.size();
  }

 private:
  template <size_t N>
  void le(uint64_t v) {
    TW_ASSERT_MSG(N <= out_.size() - pos_, "encode() sized the output first");
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(out_.data() + pos_, &v, N);
      pos_ += N;
    } else {
      for (size_t i = 0; i < N; ++i) out_[pos_++] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
    }
  }
  std::span<std::byte> out_;
  size_t pos_ = 0;
};

// Little-endian reader over untrusted bytes. Every read checks the remaining
// length first; a failed read records a kMalformedMessage naming the field and
// offset, returned by error().
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> in) : in_(in) {}
  size_t offset() const { return pos_; }
  size_t remaining() const { return in_.size() - pos_; }
  const Status& error() const { return error_; }

  std::optional<uint8_t> u8(const char* field) {
    auto v = le<1>(field);
    return v ? std::optional<uint8_t>(static_cast<uint8_t>(*v)) : std::nullopt;
  }
  std::optional<uint16_t> u16(const char* field) {
    auto v = le<2>(field);
    return v ? std::optional<uint16_t>(static_cast<uint16_t>(*v)) : std::nullopt;
  }
  std::optional<uint32_t> u32(const char* field) {
    auto v = le<4>(field);
    return v ? std::optional<uint32_t>(static_cast<uint32_t>(*v)) : std::nullopt;
  }
  std::optional<uint64_t> u64(const char* field) { return le<8>(field); }

  bool string(const char* field, size_t n, std::string& out) {
    if (!has(field, n)) return false;
    out.assign(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return true;
  }

  Status malformed(const char* field, size_t at, const std::string& what) {
    record(field, at, what);
    return error_;
  }

 private:
  bool has(const char* field, size_t n) {
    if (remaining() >= n) return true;
    record(field, pos_,
           "truncated (needs " + std::to_string(n) + " bytes, " + std::to_string(remaining()) +
               " left)");
    return false;
  }
  void record(const char* field, size_t at, const std::string& what) {
    error_ =
        Status(StatusCode::kMalformedMessage, std::string("RdmaMessage: ") + field + " at offset " +
                                                  std::to_string(at) + ": " + what);
  }
  template <size_t N>
  std::optional<uint64_t> le(const char* field) {
    if (!has(field, N)) return std::nullopt;
    uint64_t v = 0;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(&v, in_.data() + pos_, N);
    } else {
      for (size_t i = 0; i < N; ++i) v |= static_cast<uint64_t>(in_[pos_ + i]) << (8 * i);
    }
    pos_ += N;
    TW_ASSERT_MSG(pos_ <= in_.size(), "a read never passes the end of the input");
    return v;
  }

  std::span<const std::byte> in_;
  size_t pos_ = 0;
  Status error_;
};

// Field widths of the layout in README.md. The length prefixes must be wide
// enough for the limits.
constexpr size_t kFixedBytes = 1 /*format*/ + 1 /*type*/ + 2 /*name_size*/ + 8 /*step_id*/ +
                               4 /*request_index*/ + 8 /*remote_addr*/ + 4 /*rkey*/ +
                               1 /*is_dead*/ + 1 /*data_type*/ + 1 /*num_dims*/ +
                               8 /*tensor_bytes*/ + 1 /*error_code*/ + 2 /*error_message_size*/;
static_assert(kMaxNameBytes <= std::numeric_limits<uint16_t>::max());
static_assert(kMaxErrorMessageBytes <= std::numeric_limits<uint16_t>::max());
static_assert(kMaxDims <= std::numeric_limits<uint8_t>::max());
// The fixed fields of the layout in README.md, byte by byte.
static_assert(kFixedBytes == 42);

bool is_valid_status_code(int raw) {
  // status_code_name() names every code and answers "UNKNOWN" otherwise, so
  // a code added to status.h becomes valid here without another list.
  return raw >= 0 && raw <= std::numeric_limits<uint8_t>::max() &&
         std::strcmp(status_code_name(static_cast<StatusCode>(raw)), "UNKNOWN") != 0;
}

// Whether the meta-data fields must describe a real tensor. A request without
// a destination (remote_addr == 0: first request or withdrawal) carries no
// cached meta-data, and ERROR_STATUS carries none at all, so their
// tensor_bytes is not checked against the shape.
bool describes_tensor(const RdmaMessage& m) {
  switch (m.type) {
    case RdmaMessageType::kMetaDataUpdate: return true;
    case RdmaMessageType::kTensorRequest:
    case RdmaMessageType::kTensorReRequest: return m.remote_addr != 0;
    case RdmaMessageType::kErrorStatus: return false;
  }
  return false;
}

// Cross-field rules on a message whose fields are individually valid (known
// data type, at most kMaxDims non-negative dims). Empty when they hold.
std::string meta_data_problem(const RdmaMessage& m) {
  std::optional<uint64_t> elements = m.tensor_shape.num_elements();
  if (!elements) return "element count of shape " + m.tensor_shape.to_string() + " overflows";
  uint64_t element_bytes = data_type_size(m.data_type);
  bool dma = !m.is_dead && is_dma_able(m.data_type);
  if (dma && element_bytes != 0 &&
      *elements > std::numeric_limits<uint64_t>::max() / element_bytes) {
    return "byte count of " + std::string(data_type_name(m.data_type)) +
           m.tensor_shape.to_string() + " overflows";
  }
  if (!describes_tensor(m)) return {};
  if (m.is_dead && m.tensor_bytes != 0) {
    return "dead tensor with tensor_bytes " + std::to_string(m.tensor_bytes) + " (must be 0)";
  }
  if (dma && m.tensor_bytes != *elements * element_bytes) {
    return "tensor_bytes " + std::to_string(m.tensor_bytes) + " inconsistent with " +
           data_type_name(m.data_type) + m.tensor_shape.to_string() + " (" +
           std::to_string(*elements * element_bytes) + " bytes)";
  }
  return {};
}

Status invalid(const std::string& what) {
  return {StatusCode::kInvalidArgument, "RdmaMessage: " + what};
}

// decode()'s stages, each over the next fields of the layout in README.md.
// Ok, or the first malformed field.

// format, type and name.
Status read_header(ByteReader& r, RdmaMessage& m) {
  size_t at = r.offset();
  auto format = r.u8("format");
  if (!format) return r.error();
  if (*format != kFormatByte) {
    return r.malformed(
        "format", at,
        "format byte " + std::to_string(*format) + ", expected " + std::to_string(kFormatByte));
  }

  at = r.offset();
  auto type = r.u8("type");
  if (!type) return r.error();
  if (!is_valid_rdma_message_type(*type)) {
    return r.malformed("type", at, "unknown type " + std::to_string(*type));
  }
  m.type = static_cast<RdmaMessageType>(*type);

  at = r.offset();
  auto name_size = r.u16("name_size");
  if (!name_size) return r.error();
  if (*name_size == 0) return r.malformed("name_size", at, "empty name");
  if (*name_size > kMaxNameBytes) {
    return r.malformed("name_size", at,
                       std::to_string(*name_size) + " exceeds " + std::to_string(kMaxNameBytes));
  }
  if (!r.string("name", *name_size, m.name)) return r.error();
  return Status::ok();
}

// step_id, request_index, remote_addr and rkey: any value is valid.
Status read_destination(ByteReader& r, RdmaMessage& m) {
  auto step_id = r.u64("step_id");
  if (!step_id) return r.error();
  m.step_id = *step_id;
  auto request_index = r.u32("request_index");
  if (!request_index) return r.error();
  m.request_index = *request_index;
  auto remote_addr = r.u64("remote_addr");
  if (!remote_addr) return r.error();
  m.remote_addr = *remote_addr;
  auto rkey = r.u32("rkey");
  if (!rkey) return r.error();
  m.rkey = *rkey;
  return Status::ok();
}

// is_dead and data_type.
Status read_tensor_kind(ByteReader& r, RdmaMessage& m) {
  size_t at = r.offset();
  auto is_dead = r.u8("is_dead");
  if (!is_dead) return r.error();
  if (*is_dead > 1) {
    return r.malformed("is_dead", at, "bool byte " + std::to_string(*is_dead) + " (not 0 or 1)");
  }
  m.is_dead = *is_dead == 1;

  at = r.offset();
  auto data_type = r.u8("data_type");
  if (!data_type) return r.error();
  if (!is_valid_data_type(*data_type)) {
    return r.malformed("data_type", at, "unknown data type " + std::to_string(*data_type));
  }
  m.data_type = static_cast<DataType>(*data_type);
  return Status::ok();
}

// num_dims and the dims: at most kMaxDims, none negative, and an element
// count that fits.
Status read_shape(ByteReader& r, RdmaMessage& m) {
  size_t shape_at = r.offset();
  auto num_dims = r.u8("num_dims");
  if (!num_dims) return r.error();
  if (*num_dims > kMaxDims) {
    return r.malformed("num_dims", shape_at,
                       std::to_string(*num_dims) + " dims exceeds " + std::to_string(kMaxDims));
  }
  m.tensor_shape.dims.reserve(*num_dims);
  for (size_t i = 0; i < *num_dims; ++i) {
    size_t at = r.offset();
    auto dim = r.u64("dim");
    if (!dim) return r.error();
    auto value = static_cast<int64_t>(*dim);
    if (value < 0) {
      return r.malformed(
          "dim", at, "dim " + std::to_string(i) + " is negative (" + std::to_string(value) + ")");
    }
    m.tensor_shape.dims.push_back(value);
  }
  if (!m.tensor_shape.num_elements()) {
    return r.malformed("tensor_shape", shape_at,
                       "element count of shape " + m.tensor_shape.to_string() + " overflows");
  }
  return Status::ok();
}

// error_code and error_message.
Status read_error(ByteReader& r, RdmaMessage& m) {
  size_t at = r.offset();
  auto error_code = r.u8("error_code");
  if (!error_code) return r.error();
  if (!is_valid_status_code(*error_code)) {
    return r.malformed("error_code", at, "unknown status code " + std::to_string(*error_code));
  }
  m.error_code = static_cast<StatusCode>(*error_code);

  at = r.offset();
  auto error_size = r.u16("error_message_size");
  if (!error_size) return r.error();
  if (*error_size > kMaxErrorMessageBytes) {
    return r.malformed(
        "error_message_size", at,
        std::to_string(*error_size) + " exceeds " + std::to_string(kMaxErrorMessageBytes));
  }
  if (!r.string("error_message", *error_size, m.error_message)) return r.error();
  return Status::ok();
}

}  // namespace

const char* rdma_message_type_name(RdmaMessageType type) {
  switch (type) {
    case RdmaMessageType::kTensorRequest: return "TENSOR_REQUEST";
    case RdmaMessageType::kMetaDataUpdate: return "META_DATA_UPDATE";
    case RdmaMessageType::kTensorReRequest: return "TENSOR_RE_REQUEST";
    case RdmaMessageType::kErrorStatus: return "ERROR_STATUS";
  }
  return "UNKNOWN";
}

bool is_valid_rdma_message_type(uint8_t raw) {
  // The values rdma_message_type_name() names (checked at every message:
  // no string compare).
  return raw >= static_cast<uint8_t>(RdmaMessageType::kTensorRequest) &&
         raw <= static_cast<uint8_t>(RdmaMessageType::kErrorStatus);
}

size_t encoded_size(const RdmaMessage& message) {
  return kFixedBytes + message.name.size() + 8 * message.tensor_shape.dims.size() +
         message.error_message.size();
}

size_t max_encoded_size() {
  return kFixedBytes + kMaxNameBytes + 8 * kMaxDims + kMaxErrorMessageBytes;
}

Status validate(const RdmaMessage& m) {
  if (!is_valid_rdma_message_type(static_cast<uint8_t>(m.type))) {
    return invalid("unknown type " + std::to_string(static_cast<unsigned>(m.type)));
  }
  if (m.name.empty()) return invalid("empty name");
  if (m.name.size() > kMaxNameBytes) {
    return invalid("name of " + std::to_string(m.name.size()) + " bytes exceeds " +
                   std::to_string(kMaxNameBytes));
  }
  if (!is_valid_data_type(static_cast<uint8_t>(m.data_type))) {
    return invalid("unknown data_type " + std::to_string(static_cast<unsigned>(m.data_type)));
  }
  if (m.tensor_shape.dims.size() > kMaxDims) {
    return invalid("shape of " + std::to_string(m.tensor_shape.dims.size()) + " dims exceeds " +
                   std::to_string(kMaxDims));
  }
  for (size_t i = 0; i < m.tensor_shape.dims.size(); ++i) {
    if (m.tensor_shape.dims[i] < 0) {
      return invalid("negative dim " + std::to_string(i) + " in shape " +
                     m.tensor_shape.to_string());
    }
  }
  if (!is_valid_status_code(static_cast<int>(m.error_code))) {
    return invalid("unknown error_code " + std::to_string(static_cast<int>(m.error_code)));
  }
  if (m.error_message.size() > kMaxErrorMessageBytes) {
    return invalid("error_message of " + std::to_string(m.error_message.size()) +
                   " bytes exceeds " + std::to_string(kMaxErrorMessageBytes));
  }
  std::string problem = meta_data_problem(m);
  if (!problem.empty()) return invalid(problem);
  return Status::ok();
}

Result<size_t> encode(const RdmaMessage& m, std::span<std::byte> out) {
  Status st = validate(m);
  if (!st.is_ok()) return st;
  size_t size = encoded_size(m);
  if (out.size() < size) {
    return invalid("needs " + std::to_string(size) + " bytes, output has " +
                   std::to_string(out.size()));
  }
  ByteWriter w(out.first(size));
  w.u8(kFormatByte);
  w.u8(static_cast<uint8_t>(m.type));
  w.u16(static_cast<uint16_t>(m.name.size()));
  w.bytes(m.name);
  w.u64(m.step_id);
  w.u32(m.request_index);
  w.u64(m.remote_addr);
  w.u32(m.rkey);
  w.u8(m.is_dead ? 1 : 0);
  w.u8(static_cast<uint8_t>(m.data_type));
  w.u8(static_cast<uint8_t>(m.tensor_shape.dims.size()));
  for (int64_t dim : m.tensor_shape.dims) w.u64(static_cast<uint64_t>(dim));
  w.u64(m.tensor_bytes);
  w.u8(static_cast<uint8_t>(m.error_code));
  w.u16(static_cast<uint16_t>(m.error_message.size()));
  w.bytes(m.error_message);
  TW_ASSERT_MSG(w.offset() == size, "encoded_size() is the exact size encode() writes");
  return w.offset();
}

Result<RdmaMessage> decode(std::span<const std::byte> in) {
  RdmaMessage m;
  if (Status st = decode_into(in, m); !st.is_ok()) return st;
  return m;
}

Status decode_into(std::span<const std::byte> in, RdmaMessage& m) {
  // A fresh message, but with the memory of the last one's name, message and dims.
  std::string name = std::move(m.name);
  std::string error_message = std::move(m.error_message);
  std::vector<int64_t> dims = std::move(m.tensor_shape.dims);
  m = RdmaMessage{};
  name.clear();
  error_message.clear();
  dims.clear();
  m.name = std::move(name);
  m.error_message = std::move(error_message);
  m.tensor_shape.dims = std::move(dims);
  ByteReader r(in);
  if (Status st = read_header(r, m); !st.is_ok()) return st;
  if (Status st = read_destination(r, m); !st.is_ok()) return st;
  if (Status st = read_tensor_kind(r, m); !st.is_ok()) return st;
  if (Status st = read_shape(r, m); !st.is_ok()) return st;
  size_t tensor_bytes_at = r.offset();
  auto tensor_bytes = r.u64("tensor_bytes");
  if (!tensor_bytes) return r.error();
  m.tensor_bytes = *tensor_bytes;
  if (Status st = read_error(r, m); !st.is_ok()) return st;

  if (r.remaining() != 0) {
    return r.malformed("end", r.offset(),
                       std::to_string(r.remaining()) + " trailing bytes after the message");
  }
  std::string problem = meta_data_problem(m);
  if (!problem.empty()) return r.malformed("tensor_bytes", tensor_bytes_at, problem);
  // What decode() accepts, encode() reproduces byte for byte: same size,
  // within the ring slot (max_encoded_size()).
  TW_ASSERT(encoded_size(m) == in.size() && in.size() <= max_encoded_size());
  return Status::ok();
}

std::string to_string(const RdmaMessage& m) {
  std::string s = std::string(rdma_message_type_name(m.type)) + " name=" + m.name +
                  " step=" + std::to_string(m.step_id) + " idx=" + std::to_string(m.request_index);
  if (m.type == RdmaMessageType::kErrorStatus) {
    return s + " " + status_code_name(m.error_code) + ": " + m.error_message;
  }
  s += std::string(" ") + data_type_name(m.data_type) + m.tensor_shape.to_string();
  if (m.is_dead) s += " dead";
  s += " bytes=" + std::to_string(m.tensor_bytes);
  if (m.remote_addr != 0) s += " dest";  // no address values: outputs must not carry them
  return s;
}

}  // namespace tensorwire::wire
