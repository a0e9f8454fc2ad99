#include "core/protocols/mvapich2_gpu/mv2_message.h"

#include <limits>
#include <optional>

#include "core/assert.h"

namespace tensorwire::mvapich2 {
namespace {

constexpr size_t kFixedHeaderBytes = 50;  // every field but name, addrs, dims and error text
constexpr uint8_t kLastStatusCode = static_cast<uint8_t>(StatusCode::kResourceLimit);

// Where each field after the name starts: the layout is fixed once the
// name's, the addrs' and the dims' sizes are known, so encode and decode name
// the same offsets in their errors.
struct Offsets {
  size_t step_id, transfer, block, flag, block_bytes, rkey, num_addrs, addrs, is_dead, dtype,
      num_dims, dims, tensor_bytes, error_code, error_size, error_message;
};

Offsets offsets_for(size_t name_bytes, size_t addrs, size_t dims) {
  Offsets o{};
  o.step_id = 6 + name_bytes;
  o.transfer = o.step_id + 8;
  o.block = o.transfer + 4;
  o.flag = o.block + 4;
  o.block_bytes = o.flag + 1;
  o.rkey = o.block_bytes + 8;
  o.num_addrs = o.rkey + 4;
  o.addrs = o.num_addrs + 1;
  o.is_dead = o.addrs + 8 * addrs;
  o.dtype = o.is_dead + 1;
  o.num_dims = o.dtype + 1;
  o.dims = o.num_dims + 1;
  o.tensor_bytes = o.dims + 8 * dims;
  o.error_code = o.tensor_bytes + 8;
  o.error_size = o.error_code + 1;
  o.error_message = o.error_size + 2;
  return o;
}

Offsets offsets_of(const Message& m) {
  return offsets_for(m.name.size(), m.addrs.size(), m.shape.dims.size());
}

Status bad(const char* field, size_t offset, const std::string& why) {
  return Status(StatusCode::kMalformedMessage, std::string("mvapich2 message: ") + field +
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
  // Refuses a value out of range where it was read.
  bool refuse(Status why) {
    if (error_.is_ok()) error_ = std::move(why);
    return false;
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
  if (m.type == MessageType::kRts && m.tensor_bytes == 0) {
    return bad("tensor_bytes", o.tensor_bytes, "an RTS announces content");
  }
  return {};
}

// The CTS's rules: a block size, an rkey's addresses that do not wrap.
Status check_cts(const Message& m, const Offsets& o) {
  if (m.block_bytes == 0) return bad("block_bytes", o.block_bytes, "must be above 0");
  if (m.addrs.empty() || m.addrs.size() > kMaxCtsAddrs) {
    return bad("num_addrs", o.num_addrs, "must be 1.." + std::to_string(kMaxCtsAddrs));
  }
  if (m.flag && m.addrs.size() != 1) {
    return bad("num_addrs", o.num_addrs, "a CTS to the user's buffer names one address");
  }
  for (size_t i = 0; i < m.addrs.size(); ++i) {
    if (m.addrs[i] > std::numeric_limits<uint64_t>::max() - m.block_bytes) {
      return bad("addrs", o.addrs + 8 * i, "the range wraps around");
    }
  }
  return {};
}

// Fields a type does not use must be zero: one encoding per message.
Status check_unused(const Message& m, const Offsets& o) {
  const bool cts = m.type == MessageType::kCts;
  if (!carries_name(m.type) && m.step_id != 0) return bad("step_id", o.step_id, "must be 0");
  const bool has_transfer = m.type == MessageType::kRts || cts || m.type == MessageType::kFin;
  if (has_transfer && m.transfer == 0) return bad("transfer", o.transfer, "must be above 0");
  // An ERROR names the transfer when it refuses an RTS, and none otherwise.
  if (!has_transfer && m.type != MessageType::kError && m.transfer != 0) {
    return bad("transfer", o.transfer, "must be 0");
  }
  if (!cts && m.type != MessageType::kFin && m.block != 0) return bad("block", o.block, "must be 0");
  const bool has_flag = cts || m.type == MessageType::kRts || m.type == MessageType::kError;
  if (!has_flag && m.flag) return bad("flag", o.flag, "must be 0");
  if (m.type == MessageType::kError && m.flag && m.transfer == 0) {
    return bad("flag", o.flag, "an ERROR that ends a transfer names it");
  }
  if (!cts && m.block_bytes != 0) return bad("block_bytes", o.block_bytes, "must be 0");
  if (!cts && (m.rkey != 0 || !m.addrs.empty())) {
    return bad("rkey", o.rkey, "only a CTS names remote memory");
  }
  if (!carries_tensor(m.type) && (m.is_dead || m.tensor_bytes != 0 || !m.shape.dims.empty())) {
    return bad("dtype", o.dtype, "only EAGER and RTS carry meta-data");
  }
  if (m.type != MessageType::kError && (m.error_code != StatusCode::kOk || !m.error_message.empty())) {
    return bad("error_code", o.error_code, "only an error message carries one");
  }
  return {};
}

Status check(const Message& m) {
  const Offsets o = offsets_of(m);
  const auto type = static_cast<uint8_t>(m.type);
  if (type < 1 || type > kMessageTypes) return bad("type", 1, "unknown " + std::to_string(type));
  if (carries_name(m.type) && (m.name.empty() || m.name.size() > kMaxTensorNameBytes)) {
    return bad("name_size", 4, "must be 1.." + std::to_string(kMaxTensorNameBytes));
  }
  if (!carries_name(m.type) && !m.name.empty()) return bad("name_size", 4, "must be 0");
  if (Status s = check_unused(m, o); !s.is_ok()) return s;
  if (m.type == MessageType::kCts) {
    if (Status s = check_cts(m, o); !s.is_ok()) return s;
  }
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

// Reads the fields from step_id to the addresses into `m`.
bool read_middle(Reader& r, Message& m) {
  const auto step = r.le("step_id", 8);
  const auto transfer = r.le("transfer", 4);
  const auto block = r.le("block", 4);
  const auto flag = r.le("flag", 1);
  const auto block_bytes = r.le("block_bytes", 8);
  const auto rkey = r.le("rkey", 4);
  const auto num_addrs = r.le("num_addrs", 1);
  if (!num_addrs) return false;
  if (*flag > 1) return r.refuse(bad("flag", r.offset() - 14, "must be 0 or 1"));
  if (*num_addrs > kMaxCtsAddrs) {
    return r.refuse(bad("num_addrs", r.offset() - 1, "more than " + std::to_string(kMaxCtsAddrs)));
  }
  m.step_id = *step;
  m.transfer = static_cast<uint32_t>(*transfer);
  m.block = static_cast<uint32_t>(*block);
  m.flag = *flag == 1;
  m.block_bytes = *block_bytes;
  m.rkey = static_cast<uint32_t>(*rkey);
  for (uint64_t i = 0; i < *num_addrs; ++i) {
    const auto a = r.le("addrs", 8);
    if (!a) return false;
    m.addrs.push_back(*a);
  }
  return true;
}

// Reads the fields from is_dead on into `m`.
bool read_tail(Reader& r, Message& m, uint8_t type) {
  const auto dead = r.le("is_dead", 1);
  const auto dtype = r.le("dtype", 1);
  const auto num_dims = r.le("num_dims", 1);
  if (!num_dims) return false;
  if (*dead > 1) return r.refuse(bad("is_dead", r.offset() - 3, "must be 0 or 1"));
  if (type >= 1 && type <= kMessageTypes && !carries_tensor(m.type) && *dtype != 0) {
    return r.refuse(bad("dtype", r.offset() - 2, "must be 0: only EAGER and RTS carry meta-data"));
  }
  if (*num_dims > kMaxDims) {
    return r.refuse(bad("num_dims", r.offset() - 1, "more than " + std::to_string(kMaxDims)));
  }
  m.is_dead = *dead == 1;
  if (carries_tensor(m.type)) m.dtype = static_cast<DataType>(*dtype);
  for (uint64_t i = 0; i < *num_dims; ++i) {
    const auto d = r.le("dims", 8);
    if (!d) return false;
    m.shape.dims.push_back(static_cast<int64_t>(*d));
  }
  const auto bytes = r.le("tensor_bytes", 8);
  const auto code = r.le("error_code", 1);
  const auto size = r.le("error_message_size", 2);
  if (!size) return false;
  if (*code > kLastStatusCode) return r.refuse(bad("error_code", r.offset() - 3, "not a StatusCode"));
  if (*size > kMaxErrorMessageBytes) {
    return r.refuse(bad("error_message_size", r.offset() - 2,
                        "more than " + std::to_string(kMaxErrorMessageBytes)));
  }
  m.tensor_bytes = *bytes;
  m.error_code = static_cast<StatusCode>(*code);
  const auto text = r.text("error_message", *size);
  if (!text) return false;
  m.error_message = *text;
  return true;
}

}  // namespace

const char* message_type_name(MessageType type) {
  switch (type) {
    case MessageType::kRequest: return "REQUEST";
    case MessageType::kEager: return "EAGER";
    case MessageType::kRts: return "RTS";
    case MessageType::kCts: return "CTS";
    case MessageType::kFin: return "FIN";
    case MessageType::kError: return "ERROR";
    case MessageType::kCredit: return "CREDIT";
  }
  return "?";
}

bool carries_tensor(MessageType type) {
  return type == MessageType::kEager || type == MessageType::kRts;
}
bool carries_name(MessageType type) {
  return type == MessageType::kRequest || carries_tensor(type) || type == MessageType::kError;
}

size_t header_size(const Message& m) {
  return kFixedHeaderBytes + m.name.size() + 8 * m.addrs.size() + 8 * m.shape.dims.size() +
         m.error_message.size();
}

size_t max_header_size() {
  return kFixedHeaderBytes + kMaxTensorNameBytes + 8 * kMaxCtsAddrs + 8 * kMaxDims +
         kMaxErrorMessageBytes;
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
  w.le(m.transfer, 4);
  w.le(m.block, 4);
  w.le(m.flag ? 1 : 0, 1);
  w.le(m.block_bytes, 8);
  w.le(m.rkey, 4);
  w.le(m.addrs.size(), 1);
  for (uint64_t a : m.addrs) w.le(a, 8);
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
  if (format && *format != kFormatByte) return bad("format", 0, "not an MVAPICH2-GPU message");
  const auto type = r.le("type", 1);
  const auto credits = r.le("credits", 2);
  const auto name_size = r.le("name_size", 2);
  if (!name_size) return r.error();
  if (*name_size > kMaxTensorNameBytes) return bad("name_size", 4, "longer than the longest name");
  const auto name = r.text("name", *name_size);
  if (!name) return r.error();
  m.type = static_cast<MessageType>(*type);
  m.credits = static_cast<uint16_t>(*credits);
  m.name = *name;
  if (!read_middle(r, m) || !read_tail(r, m, static_cast<uint8_t>(*type))) return r.error();
  if (Status s = check(m); !s.is_ok()) return s;
  d.payload_offset = r.offset();
  TW_ASSERT(d.payload_offset == header_size(m));
  const uint64_t payload = m.type == MessageType::kEager ? m.tensor_bytes : 0;
  if (r.remaining() != payload) {
    return bad("content", r.offset(), std::to_string(r.remaining()) + " bytes follow the header, " +
                                          std::to_string(payload) + " expected");
  }
  return d;
}

}  // namespace tensorwire::mvapich2
