// The legacy verbs message and channel setup record: every type round-trips,
// the encoding is canonical, and malformed bytes (truncated anywhere, bad
// fields, trailing bytes) are refused with the field named, never read past.
// ERROR, the harness's seventh type, keeps the seed's fields and appends its
// code and text; a code that is no error, or a text too long, is refused.
#include <gtest/gtest.h>

#include <vector>

#include "core/protocols/tf_verbs_legacy/channel_setup.h"
#include "core/protocols/tf_verbs_legacy/legacy_message.h"
#include "core/protocols/tf_verbs_legacy/legacy_options.h"

namespace tensorwire::tf_legacy {
namespace {

RdmaMessage with_meta(RdmaMessageType type) {
  RdmaMessage m;
  m.type = type;
  m.name = "conv1/kernel";
  m.step_id = 7;
  m.data_type = DataType::kFloat32;
  m.tensor_shape.dims = {3, 4};
  m.tensor_bytes = 48;
  if (type == RdmaMessageType::kTensorWrite) m.buffer_size = 48;
  if (type == RdmaMessageType::kBufferRequest || type == RdmaMessageType::kBufferResponse) {
    m.buffer_size = 64;
    m.remote_addr = 0x1000;
    m.rkey = 9;
  }
  return m;
}

RdmaMessage error_message() {
  RdmaMessage m;
  m.type = RdmaMessageType::kError;
  m.name = "fc/bias";
  m.step_id = 3;
  m.error_code = StatusCode::kAborted;
  m.error_text = "step aborted";
  return m;
}

std::vector<RdmaMessage> one_of_each() {
  RdmaMessage ack;
  RdmaMessage idle;
  idle.type = RdmaMessageType::kBufferIdle;
  idle.name = "conv1/kernel";
  RdmaMessage request;
  request.type = RdmaMessageType::kTensorRequest;
  request.name = "fc/bias";
  request.step_id = 3;
  return {ack, idle, request, with_meta(RdmaMessageType::kBufferRequest),
          with_meta(RdmaMessageType::kBufferResponse), with_meta(RdmaMessageType::kTensorWrite),
          error_message()};
}

TEST(LegacyMessage, EveryTypeRoundTripsAndItsFramedSizeIsItsLength) {
  for (const RdmaMessage& m : one_of_each()) {
    Result<std::vector<std::byte>> bytes = encode(m);
    ASSERT_TRUE(bytes.is_ok()) << message_type_name(m.type) << ": " << bytes.status().message();
    EXPECT_EQ(bytes->size(), encoded_size(m));
    EXPECT_LE(bytes->size(), max_encoded_size());
    Result<RdmaMessage> back = decode(*bytes);
    ASSERT_TRUE(back.is_ok()) << back.status().message();
    EXPECT_EQ(*back, m);
    std::vector<std::byte> slot = *bytes;
    slot.resize(1024);  // a header slot is longer than the header
    Result<size_t> framed = framed_size(slot);
    ASSERT_TRUE(framed.is_ok());
    EXPECT_EQ(*framed, bytes->size());
  }
}

TEST(LegacyMessage, EveryTruncationIsRefusedNamingAField) {
  for (const RdmaMessage& m : one_of_each()) {
    const std::vector<std::byte> bytes = *encode(m);
    for (size_t n = 0; n < bytes.size(); ++n) {
      Result<RdmaMessage> r = decode(std::span(bytes).first(n));
      ASSERT_FALSE(r.is_ok()) << message_type_name(m.type) << " cut at " << n;
      EXPECT_EQ(r.status().code(), StatusCode::kMalformedMessage);
      EXPECT_NE(r.status().message().find("at byte"), std::string::npos) << r.status().message();
    }
  }
}

// One byte changed at `offset` of a valid TENSOR_WRITE must be refused.
void expect_refused(size_t offset, uint8_t value, const char* field) {
  std::vector<std::byte> bytes = *encode(with_meta(RdmaMessageType::kTensorWrite));
  bytes[offset] = static_cast<std::byte>(value);
  Result<RdmaMessage> r = decode(bytes);
  ASSERT_FALSE(r.is_ok()) << field;
  EXPECT_EQ(r.status().code(), StatusCode::kMalformedMessage);
  EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
}

TEST(LegacyMessage, BadFieldsAreRefusedByName) {
  const size_t n = 12;  // "conv1/kernel"
  expect_refused(0, 0, "type");
  expect_refused(0, 8, "type");
  expect_refused(2, 0x03, "name_size");      // 768 + 12 > 512
  expect_refused(3 + n + 16, 1, "remote_addr");  // a write names no remote memory
  expect_refused(3 + n + 28, 2, "is_dead");
  expect_refused(3 + n + 29, 9, "data_type");  // strings are not carried
  expect_refused(3 + n + 30, 33, "num_dims");
  expect_refused(3 + n + 31 + 16, 49, "tensor_bytes");  // not 3 x 4 x 4
  expect_refused(3 + n + 8, 47, "buffer_size");         // a write carries exactly tensor_bytes
}

TEST(LegacyMessage, TrailingBytesAndUnusedFieldsAreRefused) {
  std::vector<std::byte> bytes = *encode(RdmaMessage{});
  bytes.push_back(std::byte{0});
  EXPECT_FALSE(decode(bytes).is_ok());
  RdmaMessage ack;
  ack.step_id = 1;  // an ACK carries nothing
  EXPECT_EQ(validate(ack).code(), StatusCode::kInvalidArgument);
  RdmaMessage idle;
  idle.type = RdmaMessageType::kBufferIdle;  // without its name
  EXPECT_FALSE(encode(idle).is_ok());
  RdmaMessage response = with_meta(RdmaMessageType::kBufferResponse);
  response.buffer_size = 8;  // smaller than the tensor
  EXPECT_FALSE(validate(response).is_ok());
}

// Found by the legacy_message fuzz target: framed_size stopped an ERROR at
// tensor_bytes, leaving its code, size and text out of the frame, so decoding
// the frame it gave refused a valid ERROR as truncated.
TEST(LegacyMessage, FramedSizeOfAnErrorCoversItsText) {
  const std::vector<std::byte> bytes = *encode(error_message());
  std::vector<std::byte> slot = bytes;
  slot.resize(1024);
  Result<size_t> framed = framed_size(slot);
  ASSERT_TRUE(framed.is_ok()) << framed.status().message();
  EXPECT_EQ(*framed, bytes.size());
  EXPECT_TRUE(decode(std::span(slot).first(*framed)).is_ok());
  // The text cut by the end of the slot, and an error_size past the bound.
  Result<size_t> cut = framed_size(std::span(bytes).first(bytes.size() - 1));
  ASSERT_FALSE(cut.is_ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kMalformedMessage);
  EXPECT_NE(cut.status().message().find("error_text"), std::string::npos) << cut.status().message();
  const size_t size_at = bytes.size() - error_message().error_text.size() - 2;
  std::vector<std::byte> too_long = bytes;
  too_long[size_at] = std::byte{161};
  Result<size_t> refused = framed_size(too_long);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("error_size"), std::string::npos)
      << refused.status().message();
}

TEST(ChannelSetup, RoundTripsAndRefusesBadRecords) {
  ChannelSetup s;
  s.rx_message_buffer = {0x1000, 1};
  s.rx_ack_buffer = {0x2000, 2};
  s.rx_header_table = {0x3000, 3};
  s.header_slots = 4;
  const std::vector<std::byte> bytes = encode_setup(s);
  Result<ChannelSetup> back = decode_setup(bytes, 8);
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(*back, s);
  EXPECT_FALSE(decode_setup(std::span(bytes).first(40), 8).is_ok());
  EXPECT_FALSE(decode_setup(bytes, 3).is_ok());  // more slots than allowed
  std::vector<std::byte> wrong = bytes;
  wrong[0] = std::byte{0};
  EXPECT_FALSE(decode_setup(wrong, 8).is_ok());
  ChannelSetup wraps = s;
  wraps.rx_header_table.addr = ~uint64_t{0} - 16;
  EXPECT_FALSE(decode_setup(encode_setup(wraps), 8).is_ok());
}

}  // namespace
}  // namespace tensorwire::tf_legacy

namespace tensorwire::tf_legacy {
namespace {

TEST(LegacyMessage, ErrorCarriesACodeAndABoundedTextAfterTheSeedsFields) {
  const RdmaMessage m = error_message();
  const std::vector<std::byte> bytes = *encode(m);
  const size_t code_at = 3 + m.name.size() + 39;  // after tensor_bytes (no dims)
  ASSERT_EQ(bytes.size(), code_at + 3 + m.error_text.size());
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 7);
  EXPECT_EQ(static_cast<uint8_t>(bytes[code_at]), static_cast<uint8_t>(StatusCode::kAborted));
  for (uint8_t code : {uint8_t{0}, uint8_t{200}}) {
    std::vector<std::byte> bad = bytes;
    bad[code_at] = static_cast<std::byte>(code);
    Result<RdmaMessage> r = decode(bad);
    ASSERT_FALSE(r.is_ok()) << int{code};
    EXPECT_NE(r.status().message().find("error_code"), std::string::npos) << r.status().message();
  }
  std::vector<std::byte> long_text = bytes;
  long_text[code_at + 1] = static_cast<std::byte>(kMaxErrorTextBytes + 1);
  Result<RdmaMessage> r = decode(long_text);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("error_size"), std::string::npos) << r.status().message();
  RdmaMessage too_long = m;
  too_long.error_text.assign(kMaxErrorTextBytes + 1, 'x');
  EXPECT_EQ(validate(too_long).code(), StatusCode::kInvalidArgument);
  RdmaMessage no_error = m;
  no_error.error_code = StatusCode::kOk;
  EXPECT_FALSE(validate(no_error).is_ok());
  RdmaMessage request = m;  // only an ERROR carries one
  request.type = RdmaMessageType::kTensorRequest;
  EXPECT_NE(validate(request).message().find("error_code"), std::string::npos);
  RdmaMessage longest = m;  // fits a message buffer
  longest.name.assign(kMaxTensorNameBytes, 'n');
  longest.error_text.assign(kMaxErrorTextBytes, 'x');
  EXPECT_LE(encode(longest)->size(), max_encoded_size());
  EXPECT_LE(max_encoded_size(), kMessageBufferBytes);
}

}  // namespace
}  // namespace tensorwire::tf_legacy
