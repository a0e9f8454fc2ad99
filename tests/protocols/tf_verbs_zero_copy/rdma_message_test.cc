// Examples for the control message encoding: round trips of every type, the
// exact byte layout, the limits encode() enforces, and one case per rule
// decode() enforces (each error must name the field and its offset).
#include "core/protocols/tf_verbs_zero_copy/rdma_message.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace tensorwire::wire {
namespace {

std::vector<std::byte> encode_ok(const RdmaMessage& m) {
  std::vector<std::byte> out(encoded_size(m));
  Result<size_t> n = encode(m, out);
  EXPECT_TRUE(n.is_ok()) << n.status().to_string();
  if (n.is_ok()) {
    EXPECT_EQ(*n, out.size());
  }
  return out;
}

// Decodes from an allocation of exactly `len` bytes, so the address
// sanitizer catches any read past the input.
Result<RdmaMessage> decode_exact(const std::vector<std::byte>& bytes, size_t len) {
  auto copy = std::make_unique<std::byte[]>(len == 0 ? 1 : len);
  if (len) std::memcpy(copy.get(), bytes.data(), len);
  return decode(std::span<const std::byte>(copy.get(), len));
}

void expect_malformed(const Result<RdmaMessage>& r, const std::string& field_at) {
  ASSERT_FALSE(r.is_ok()) << "decoded a malformed message";
  EXPECT_EQ(r.status().code(), StatusCode::kMalformedMessage) << r.status().to_string();
  EXPECT_NE(r.status().message().find(field_at), std::string::npos)
      << "'" << r.status().message() << "' does not mention '" << field_at << "'";
}

// Byte offsets of the layout for a message with an n-byte name and d dims.
struct Offsets {
  size_t n, d;
  size_t name_size() const { return 2; }
  size_t step_id() const { return 4 + n; }
  size_t remote_addr() const { return 16 + n; }
  size_t is_dead() const { return 28 + n; }
  size_t data_type() const { return 29 + n; }
  size_t num_dims() const { return 30 + n; }
  size_t dim(size_t i) const { return 31 + n + 8 * i; }
  size_t tensor_bytes() const { return 31 + n + 8 * d; }
  size_t error_code() const { return 39 + n + 8 * d; }
  size_t error_message_size() const { return 40 + n + 8 * d; }
};

void put_le(std::vector<std::byte>& b, size_t at, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

RdmaMessage tensor_request() {
  RdmaMessage m;
  m.type = RdmaMessageType::kTensorRequest;
  m.name = "edge_12_weights;0:0";
  m.step_id = 0x0123456789abcdefULL;
  m.request_index = 77;
  m.remote_addr = 0x7f0000001000ULL;
  m.rkey = 0xdeadbeef;
  m.data_type = DataType::kFloat32;
  m.tensor_shape.dims = {3, 224, 224};
  m.tensor_bytes = 3 * 224 * 224 * 4;
  return m;
}

RdmaMessage meta_data_update() {
  RdmaMessage m;
  m.type = RdmaMessageType::kMetaDataUpdate;
  m.name = "grad/conv1";
  m.step_id = 5;
  m.request_index = 9;
  m.data_type = DataType::kBFloat16;
  m.tensor_shape.dims = {64, 0, 7};  // an empty tensor
  m.tensor_bytes = 0;
  return m;
}

RdmaMessage error_status() {
  RdmaMessage m;
  m.type = RdmaMessageType::kErrorStatus;
  m.name = "x";
  m.step_id = 1;
  m.request_index = 2;
  m.error_code = StatusCode::kAborted;
  m.error_message = "step 1 aborted";
  return m;
}

TEST(RdmaMessage, TypeNamesAndWireValues) {
  EXPECT_STREQ(rdma_message_type_name(RdmaMessageType::kTensorRequest), "TENSOR_REQUEST");
  EXPECT_STREQ(rdma_message_type_name(RdmaMessageType::kMetaDataUpdate), "META_DATA_UPDATE");
  EXPECT_STREQ(rdma_message_type_name(RdmaMessageType::kTensorReRequest), "TENSOR_RE_REQUEST");
  EXPECT_STREQ(rdma_message_type_name(RdmaMessageType::kErrorStatus), "ERROR_STATUS");
  EXPECT_STREQ(rdma_message_type_name(static_cast<RdmaMessageType>(0)), "UNKNOWN");
  EXPECT_FALSE(is_valid_rdma_message_type(0));
  EXPECT_TRUE(is_valid_rdma_message_type(1));
  EXPECT_TRUE(is_valid_rdma_message_type(4));
  EXPECT_FALSE(is_valid_rdma_message_type(5));
}

TEST(RdmaMessage, RoundTripsEveryType) {
  RdmaMessage re_request = tensor_request();
  re_request.type = RdmaMessageType::kTensorReRequest;
  RdmaMessage dead = meta_data_update();
  dead.is_dead = true;
  dead.tensor_shape.dims = {4, 4};
  dead.tensor_bytes = 0;
  RdmaMessage strings = meta_data_update();
  strings.data_type = DataType::kString;
  strings.tensor_shape.dims = {2};
  strings.tensor_bytes = 8 + 2 * 8 + 11;  // a proto size, not elements * size
  RdmaMessage scalar = tensor_request();
  scalar.data_type = DataType::kInt64;
  scalar.tensor_shape.dims = {};
  scalar.tensor_bytes = 8;
  for (const RdmaMessage& m :
       {tensor_request(), meta_data_update(), re_request, error_status(), dead, strings, scalar}) {
    SCOPED_TRACE(to_string(m));
    std::vector<std::byte> bytes = encode_ok(m);
    EXPECT_EQ(bytes.size(), encoded_size(m));
    EXPECT_LE(bytes.size(), max_encoded_size());
    Result<RdmaMessage> back = decode(bytes);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(*back, m);
  }
}

// is_valid_rdma_message_type() is a range check now: it still accepts exactly
// the wire values rdma_message_type_name() knows.
TEST(RdmaMessage, ValidTypesAreExactlyTheNamedOnes) {
  for (int raw = 0; raw <= 255; ++raw) {
    const bool named = std::string(rdma_message_type_name(static_cast<RdmaMessageType>(raw))) !=
                       "UNKNOWN";
    EXPECT_EQ(is_valid_rdma_message_type(static_cast<uint8_t>(raw)), named) << raw;
  }
}

// decode_into reuses one message for every receive: nothing of the message
// decoded before may show through (a longer name, more dims, an error message,
// a dead flag), and a failed decode leaves no trace in the next one.
TEST(RdmaMessage, DecodeIntoReusesAMessageWithoutLeftovers) {
  RdmaMessage dead = meta_data_update();
  dead.is_dead = true;
  dead.tensor_shape.dims = {4, 4};
  dead.tensor_bytes = 0;
  RdmaMessage scalar = tensor_request();
  scalar.name = "s";
  scalar.data_type = DataType::kInt64;
  scalar.tensor_shape.dims = {};
  scalar.tensor_bytes = 8;
  std::vector<std::byte> truncated = encode_ok(tensor_request());
  truncated.pop_back();
  RdmaMessage into;
  for (const RdmaMessage& m : {tensor_request(), error_status(), dead, scalar, tensor_request()}) {
    SCOPED_TRACE(to_string(m));
    EXPECT_FALSE(decode_into(truncated, into).is_ok());
    Status st = decode_into(encode_ok(m), into);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(into, m);
  }
}

// The messages the tf_verbs protocol builds must pass validation: a first
// request carries default meta-data and no destination, a withdrawal has no
// destination, an error status carries no meta-data.
TEST(RdmaMessage, AcceptsTheProtocolsMessagesWithoutMetaData) {
  RdmaMessage first;
  first.type = RdmaMessageType::kTensorRequest;
  first.name = "t";
  RdmaMessage withdrawal = tensor_request();
  withdrawal.type = RdmaMessageType::kTensorReRequest;
  withdrawal.remote_addr = 0;
  withdrawal.rkey = 0;
  withdrawal.tensor_bytes = 0;
  RdmaMessage error = error_status();
  error.tensor_shape.dims = {5};  // meta-data of an error status is ignored
  for (const RdmaMessage& m : {first, withdrawal, error}) {
    SCOPED_TRACE(to_string(m));
    EXPECT_TRUE(validate(m).is_ok()) << validate(m).to_string();
    Result<RdmaMessage> back = decode(encode_ok(m));
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(*back, m);
  }
}

TEST(RdmaMessage, ExactByteLayoutIsLittleEndian) {
  RdmaMessage m;
  m.type = RdmaMessageType::kMetaDataUpdate;
  m.name = "ab";
  m.step_id = 0x0102030405060708ULL;
  m.request_index = 0x11223344;
  m.remote_addr = 0;
  m.rkey = 0xa0b0c0d0;
  m.is_dead = false;
  m.data_type = DataType::kInt32;
  m.tensor_shape.dims = {2, 0x0300};
  m.tensor_bytes = 2 * 0x300 * 4;  // 0x1800
  m.error_code = StatusCode::kOk;
  m.error_message = "e";
  std::vector<uint8_t> expected = {
      0xA1, 2,    2,    0,    'a',  'b',               // format, type, name_size, name
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // step_id
      0x44, 0x33, 0x22, 0x11,                          // request_index
      0,    0,    0,    0,    0,    0,    0,    0,     // remote_addr
      0xd0, 0xc0, 0xb0, 0xa0,                          // rkey
      0,    5,    2,                                   // is_dead, data_type, num_dims
      2,    0,    0,    0,    0,    0,    0,    0,     // dim 0
      0x00, 0x03, 0,    0,    0,    0,    0,    0,     // dim 1
      0x00, 0x18, 0,    0,    0,    0,    0,    0,     // tensor_bytes
      0,    1,    0,    'e',                           // error_code, size, message
  };
  std::vector<std::byte> bytes = encode_ok(m);
  ASSERT_EQ(bytes.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(static_cast<uint8_t>(bytes[i]), expected[i]) << "byte " << i;
  }
}

TEST(RdmaMessage, LargestValidMessageIsMaxEncodedSize) {
  RdmaMessage m = error_status();
  m.name = std::string(kMaxNameBytes, 'n');
  m.tensor_shape.dims.assign(kMaxDims, 1);
  m.error_message = std::string(kMaxErrorMessageBytes, 'e');
  std::vector<std::byte> bytes = encode_ok(m);
  EXPECT_EQ(bytes.size(), max_encoded_size());
  EXPECT_EQ(max_encoded_size(), 1066u);  // the ring slot size documented in README.md
  Result<RdmaMessage> back = decode(bytes);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, m);
}

TEST(RdmaMessage, EncodeRejectsBrokenLimits) {
  std::vector<RdmaMessage> bad;
  RdmaMessage m = tensor_request();
  m.name = "";
  bad.push_back(m);
  m = tensor_request();
  m.name = std::string(kMaxNameBytes + 1, 'n');
  bad.push_back(m);
  m = error_status();
  m.tensor_shape.dims.assign(kMaxDims + 1, 1);
  bad.push_back(m);
  m = error_status();
  m.tensor_shape.dims = {2, -1};
  bad.push_back(m);
  m = error_status();
  m.error_message = std::string(kMaxErrorMessageBytes + 1, 'e');
  bad.push_back(m);
  m = tensor_request();
  m.type = static_cast<RdmaMessageType>(9);
  bad.push_back(m);
  m = tensor_request();
  m.data_type = static_cast<DataType>(0);
  bad.push_back(m);
  m = error_status();
  m.error_code = static_cast<StatusCode>(200);
  bad.push_back(m);
  m = tensor_request();
  m.tensor_bytes += 1;  // inconsistent with float32[3,224,224]
  bad.push_back(m);
  m = meta_data_update();
  m.is_dead = true;
  m.tensor_bytes = 4;  // a dead tensor has no content
  bad.push_back(m);
  m = error_status();
  m.tensor_shape.dims = {int64_t{1} << 40, int64_t{1} << 40};  // 2^80 elements
  bad.push_back(m);
  for (const RdmaMessage& msg : bad) {
    SCOPED_TRACE(to_string(msg));
    EXPECT_EQ(validate(msg).code(), StatusCode::kInvalidArgument);
    std::vector<std::byte> out(max_encoded_size() + 1024);
    Result<size_t> n = encode(msg, out);
    ASSERT_FALSE(n.is_ok());
    EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(RdmaMessage, EncodeRejectsTooSmallOutput) {
  RdmaMessage m = tensor_request();
  std::vector<std::byte> out(encoded_size(m) - 1);
  Result<size_t> n = encode(m, out);
  ASSERT_FALSE(n.is_ok());
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
  std::vector<std::byte> larger(encoded_size(m) + 10);
  n = encode(m, larger);
  ASSERT_TRUE(n.is_ok());
  EXPECT_EQ(*n, encoded_size(m));
}

TEST(RdmaMessage, DecodeRejectsEveryTruncation) {
  RdmaMessage big = error_status();
  big.tensor_shape.dims = {1, 2, 3};
  big.error_message = "something failed";
  for (const RdmaMessage& m : {tensor_request(), meta_data_update(), error_status(), big}) {
    SCOPED_TRACE(to_string(m));
    std::vector<std::byte> bytes = encode_ok(m);
    for (size_t len = 0; len < bytes.size(); ++len) {
      SCOPED_TRACE("prefix of " + std::to_string(len) + " bytes");
      expect_malformed(decode_exact(bytes, len), "truncated");
    }
    ASSERT_TRUE(decode_exact(bytes, bytes.size()).is_ok());
  }
}

TEST(RdmaMessage, DecodeRejectsTrailingBytes) {
  std::vector<std::byte> bytes = encode_ok(tensor_request());
  bytes.push_back(std::byte{0});
  expect_malformed(decode_exact(bytes, bytes.size()),
                   "end at offset " + std::to_string(bytes.size() - 1) + ": 1 trailing");
}

TEST(RdmaMessage, DecodeRejectsEachBadField) {
  const RdmaMessage base = tensor_request();  // float32 [3,224,224], 19-byte name
  const Offsets at{base.name.size(), base.tensor_shape.dims.size()};
  const std::vector<std::byte> good = encode_ok(base);
  struct Case {
    std::string what;
    size_t offset;
    uint64_t value;
    int width;
    std::string expect;
  };
  auto where = [](const char* field, size_t offset) {
    return std::string(field) + " at offset " + std::to_string(offset);
  };
  const std::vector<Case> cases = {
      {"bad format byte", 0, 0x42, 1, where("format", 0)},
      {"type 0", 1, 0, 1, where("type", 1)},
      {"type 5", 1, 5, 1, where("type", 1)},
      {"name_size 0", at.name_size(), 0, 2, where("name_size", 2) + ": empty name"},
      {"name_size over limit", at.name_size(), kMaxNameBytes + 1, 2, where("name_size", 2)},
      {"name beyond input", at.name_size(), 500, 2, where("name", 4) + ": truncated"},
      {"bool byte 2", at.is_dead(), 2, 1, where("is_dead", at.is_dead())},
      {"data_type 0", at.data_type(), 0, 1, where("data_type", at.data_type())},
      {"data_type 10", at.data_type(), 10, 1, where("data_type", at.data_type())},
      {"too many dims", at.num_dims(), kMaxDims + 1, 1, where("num_dims", at.num_dims())},
      {"negative dim", at.dim(1), static_cast<uint64_t>(int64_t{-224}), 8,
       where("dim", at.dim(1)) + ": dim 1 is negative"},
      {"tensor_bytes off by one", at.tensor_bytes(), 3 * 224 * 224 * 4 + 1, 8,
       where("tensor_bytes", at.tensor_bytes()) + ": tensor_bytes 602113 inconsistent"},
      {"element count overflow", at.dim(0), uint64_t{1} << 62, 8,
       where("tensor_shape", at.num_dims()) + ": element count of shape"},
      {"unknown error code", at.error_code(), 200, 1, where("error_code", at.error_code())},
      {"error message over limit", at.error_message_size(), kMaxErrorMessageBytes + 1, 2,
       where("error_message_size", at.error_message_size())},
      {"error message beyond input", at.error_message_size(), 3, 2,
       "error_message at offset " + std::to_string(good.size()) + ": truncated"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<std::byte> bytes = good;
    put_le(bytes, c.offset, c.value, c.width);
    expect_malformed(decode_exact(bytes, bytes.size()), c.expect);
  }
}

TEST(RdmaMessage, DecodeRejectsByteCountOverflowAndDeadContent) {
  RdmaMessage m = meta_data_update();
  m.data_type = DataType::kFloat64;
  m.tensor_shape.dims = {1, 1};
  m.tensor_bytes = 8;
  const Offsets at{m.name.size(), 2};
  std::vector<std::byte> bytes = encode_ok(m);
  // 2^61 * 2^2 elements fit in 64 bits, their float64 bytes (2^66) do not.
  put_le(bytes, at.dim(0), uint64_t{1} << 61, 8);
  put_le(bytes, at.dim(1), 4, 8);
  expect_malformed(decode_exact(bytes, bytes.size()), "byte count of float64");

  bytes = encode_ok(m);
  put_le(bytes, at.is_dead(), 1, 1);  // dead, yet 8 content bytes
  expect_malformed(decode_exact(bytes, bytes.size()), "dead tensor with tensor_bytes 8");

  // The same overflow is fine for a string tensor: its bytes are a proto size.
  bytes = encode_ok(m);
  put_le(bytes, at.data_type(), static_cast<uint8_t>(DataType::kString), 1);
  put_le(bytes, at.dim(0), uint64_t{1} << 61, 8);
  put_le(bytes, at.dim(1), 4, 8);
  EXPECT_TRUE(decode_exact(bytes, bytes.size()).is_ok());
}

TEST(RdmaMessage, ToStringHasNoAddresses) {
  std::string s = to_string(tensor_request());
  EXPECT_EQ(s,
            "TENSOR_REQUEST name=edge_12_weights;0:0 step=81985529216486895 idx=77 "
            "float32[3,224,224] bytes=602112 dest");
  EXPECT_EQ(to_string(error_status()), "ERROR_STATUS name=x step=1 idx=2 ABORTED: step 1 aborted");
}

}  // namespace
}  // namespace tensorwire::wire
