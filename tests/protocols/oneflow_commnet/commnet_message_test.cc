// CommNet's wire message: every type round-trips, every rule is enforced by
// decode with the field named, and no input (truncated, mutated, random) is
// read past its end.
#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <vector>

#include "core/protocols/oneflow_commnet/commnet_message.h"

namespace tensorwire::oneflow {
namespace {

Message descriptor() {
  Message m;
  m.type = MessageType::kDescriptor;
  m.credits = 3;
  m.name = "layer1/weights";
  m.step_id = 7;
  m.token = 42;
  m.remote_addr = 0x10000;
  m.rkey = 0xabcd;
  m.dtype = DataType::kFloat32;
  m.shape.dims = {16, 64};
  m.tensor_bytes = 16 * 64 * 4;
  return m;
}

Message eager(uint64_t elements) {
  Message m;
  m.type = MessageType::kEagerTensor;
  m.name = "b";
  m.step_id = 1;
  m.dtype = DataType::kInt64;
  m.shape.dims = {static_cast<int64_t>(elements)};
  m.tensor_bytes = elements * 8;
  return m;
}

// The header, then `content` bytes of content.
std::vector<std::byte> wire(const Message& m, size_t content) {
  Result<std::vector<std::byte>> h = encode_header(m);
  EXPECT_TRUE(h.is_ok()) << h.status().to_string();
  std::vector<std::byte> out = h.is_ok() ? *h : std::vector<std::byte>{};
  for (size_t i = 0; i < content; ++i) out.push_back(static_cast<std::byte>(i * 7));
  return out;
}

void expect_same(const Message& a, const Message& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.credits, b.credits);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.step_id, b.step_id);
  EXPECT_EQ(a.token, b.token);
  EXPECT_EQ(a.remote_addr, b.remote_addr);
  EXPECT_EQ(a.rkey, b.rkey);
  EXPECT_EQ(a.is_dead, b.is_dead);
  if (carries_tensor(a.type)) {
    EXPECT_EQ(a.dtype, b.dtype);
  }
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.tensor_bytes, b.tensor_bytes);
  EXPECT_EQ(a.error_code, b.error_code);
  EXPECT_EQ(a.error_message, b.error_message);
}

TEST(CommNetMessage, EveryTypeRoundTrips) {
  Message request;
  request.type = MessageType::kRequest;
  request.name = "a";
  request.step_id = 3;
  Message done;
  done.type = MessageType::kReadDone;
  done.token = 9;
  done.credits = 2;
  Message error;
  error.type = MessageType::kError;
  error.name = "a";
  error.error_code = StatusCode::kAborted;
  error.error_message = "step 3 aborted";
  Message credit;
  credit.type = MessageType::kCredit;
  credit.credits = 31;
  Message dead = eager(0);
  dead.is_dead = true;
  dead.shape.dims = {5};
  for (const Message& m : {request, eager(4), descriptor(), done, error, credit, dead}) {
    const size_t content = m.type == MessageType::kEagerTensor ? m.tensor_bytes : 0;
    const std::vector<std::byte> bytes = wire(m, content);
    EXPECT_EQ(bytes.size(), header_size(m) + content);
    Result<Decoded> d = decode(bytes);
    ASSERT_TRUE(d.is_ok()) << message_type_name(m.type) << ": " << d.status().to_string();
    expect_same(m, d->message);
    EXPECT_EQ(d->payload_offset, header_size(m));
  }
}

TEST(CommNetMessage, EncodeRefusesWhatDecodeWould) {
  Message m = descriptor();
  m.tensor_bytes += 1;
  EXPECT_EQ(encode_header(m).status().code(), StatusCode::kInvalidArgument);
  m = descriptor();
  m.dtype = DataType::kString;
  EXPECT_FALSE(encode_header(m).is_ok());
  m = descriptor();
  m.name.clear();
  EXPECT_FALSE(encode_header(m).is_ok());
  m = descriptor();
  m.name.assign(kMaxTensorNameBytes + 1, 'x');
  EXPECT_FALSE(encode_header(m).is_ok());
  Message credit;
  credit.type = MessageType::kCredit;
  credit.token = 1;  // only descriptors and READ_DONE carry a token
  EXPECT_FALSE(encode_header(credit).is_ok());
  Message dead_descriptor = descriptor();
  dead_descriptor.is_dead = true;
  dead_descriptor.tensor_bytes = 0;
  EXPECT_FALSE(encode_header(dead_descriptor).is_ok()) << "a descriptor names content to read";
  Message wraps = descriptor();
  wraps.remote_addr = UINT64_MAX - 10;
  EXPECT_FALSE(encode_header(wraps).is_ok());
}

// The error names the field and its byte offset.
void expect_malformed(const std::vector<std::byte>& bytes, const std::string& field) {
  Result<Decoded> d = decode(bytes);
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().code(), StatusCode::kMalformedMessage);
  EXPECT_NE(d.status().message().find(field), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("at byte"), std::string::npos) << d.status().message();
}

TEST(CommNetMessage, DecodeNamesTheBadField) {
  std::vector<std::byte> b = wire(descriptor(), 0);
  b[0] = std::byte{0x00};
  expect_malformed(b, "format");
  b = wire(descriptor(), 0);
  b[1] = std::byte{9};
  expect_malformed(b, "type");
  b = wire(eager(4), 31);
  expect_malformed(b, "content");  // one byte short
  b = wire(eager(4), 33);
  expect_malformed(b, "content");  // one byte over
  b = wire(descriptor(), 1);
  expect_malformed(b, "content");  // a descriptor carries none
  b = wire(descriptor(), 0);
  const size_t name = descriptor().name.size();
  b[6 + name + 8 + 4 + 8 + 4 + 2] = std::byte{33};  // num_dims
  expect_malformed(b, "num_dims");
  b = wire(descriptor(), 0);
  b[6 + name + 8 + 4 + 8 + 4] = std::byte{2};  // is_dead
  expect_malformed(b, "is_dead");
  b = wire(descriptor(), 0);
  b[6 + name + 8 + 4 + 8 + 4 + 1] = std::byte{9};  // dtype: string
  expect_malformed(b, "dtype");
}

TEST(CommNetMessage, EveryTruncationIsRefused) {
  for (const Message& m : {descriptor(), eager(3)}) {
    const std::vector<std::byte> whole = wire(m, m.type == MessageType::kEagerTensor ? 24 : 0);
    for (size_t n = 0; n < whole.size(); ++n) {
      const std::vector<std::byte> part(whole.begin(), whole.begin() + static_cast<long>(n));
      Result<Decoded> d = decode(part);
      EXPECT_FALSE(d.is_ok()) << n << " of " << whole.size() << " bytes";
      EXPECT_EQ(d.status().code(), StatusCode::kMalformedMessage);
    }
  }
}

// Mutated and random inputs: decode answers (ok or malformed) and what it
// accepts re-encodes to the same header (the encoding is canonical).
TEST(CommNetMessage, MutatedInputsNeverReadPastTheEnd) {
  std::mt19937_64 rng(11);
  const std::vector<std::byte> base = wire(descriptor(), 0);
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::byte> b = base;
    if (i % 3 == 0) b.resize(rng() % (base.size() + 8), std::byte{0});
    for (int k = 0; k < 1 + i % 4 && !b.empty(); ++k) {
      b[rng() % b.size()] = static_cast<std::byte>(rng());
    }
    Result<Decoded> d = decode(b);
    if (!d.is_ok()) {
      EXPECT_EQ(d.status().code(), StatusCode::kMalformedMessage);
      continue;
    }
    Result<std::vector<std::byte>> again = encode_header(d->message);
    ASSERT_TRUE(again.is_ok());
    EXPECT_TRUE(std::equal(again->begin(), again->end(), b.begin()));
  }
}

}  // namespace
}  // namespace tensorwire::oneflow
