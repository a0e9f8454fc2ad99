// The serialized form of string tensors: exact sizes, round trips, and
// rejection of every malformed payload without allocating from untrusted
// lengths.
#include "core/protocols/tf_verbs_zero_copy/tensor_proto.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace tensorwire::wire {
namespace {

std::vector<std::byte> serialize_ok(const std::vector<std::string>& strings) {
  std::vector<std::byte> out(serialized_strings_size(strings));
  Result<size_t> n = serialize_strings(strings, out);
  EXPECT_TRUE(n.is_ok()) << n.status().to_string();
  if (n.is_ok()) {
    EXPECT_EQ(*n, out.size());
  }
  return out;
}

// Deserializes from an allocation of exactly `len` bytes (ASan catches overreads).
Result<std::vector<std::string>> deserialize_exact(const std::vector<std::byte>& bytes, size_t len,
                                                   uint64_t expected_elements) {
  auto copy = std::make_unique<std::byte[]>(len == 0 ? 1 : len);
  if (len) std::memcpy(copy.get(), bytes.data(), len);
  return deserialize_strings(std::span<const std::byte>(copy.get(), len), expected_elements);
}

void put_u64(std::vector<std::byte>& b, size_t at, uint64_t v) {
  for (size_t i = 0; i < 8; ++i) b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

void expect_malformed(const Result<std::vector<std::string>>& r, const std::string& what) {
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kMalformedMessage) << r.status().to_string();
  EXPECT_NE(r.status().message().find(what), std::string::npos)
      << "'" << r.status().message() << "' does not mention '" << what << "'";
}

const std::vector<std::string> kSample = {"hello", "", std::string("a\0b", 3), "world!"};

TEST(TensorProto, SizeIsCountPlusLengthPrefixedElements) {
  EXPECT_EQ(serialized_strings_size({}), 8u);
  EXPECT_EQ(serialized_strings_size({""}), 16u);
  EXPECT_EQ(serialized_strings_size(kSample), 8u + 4 * 8 + 5 + 0 + 3 + 6);
}

TEST(TensorProto, ExactLayout) {
  std::vector<std::byte> bytes = serialize_ok({"ab", ""});
  std::vector<uint8_t> expected = {2, 0, 0, 0, 0, 0, 0, 0,  // element count
                                   2, 0, 0, 0, 0, 0, 0, 0, 'a', 'b', 0, 0, 0, 0, 0, 0, 0, 0};
  ASSERT_EQ(bytes.size(), expected.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    EXPECT_EQ(static_cast<uint8_t>(bytes[i]), expected[i]) << "byte " << i;
  }
}

TEST(TensorProto, RoundTrips) {
  std::vector<std::vector<std::string>> cases = {
      {}, {""}, kSample, {std::string(100000, 'z'), "tail"}, std::vector<std::string>(1000, "x")};
  for (const auto& strings : cases) {
    std::vector<std::byte> bytes = serialize_ok(strings);
    auto back = deserialize_exact(bytes, bytes.size(), strings.size());
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(*back, strings);
  }
}

TEST(TensorProto, SerializeRejectsTooSmallOutput) {
  std::vector<std::byte> out(serialized_strings_size(kSample) - 1);
  Result<size_t> n = serialize_strings(kSample, out);
  ASSERT_FALSE(n.is_ok());
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
}

TEST(TensorProto, RejectsElementCountMismatch) {
  std::vector<std::byte> bytes = serialize_ok(kSample);
  expect_malformed(deserialize_exact(bytes, bytes.size(), 3), "element count 4, shape has 3");
  expect_malformed(deserialize_exact(bytes, bytes.size(), 5), "element count 4, shape has 5");
}

TEST(TensorProto, RejectsEveryTruncation) {
  std::vector<std::byte> bytes = serialize_ok(kSample);
  for (size_t len = 0; len < bytes.size(); ++len) {
    SCOPED_TRACE("prefix of " + std::to_string(len) + " bytes");
    auto r = deserialize_exact(bytes, len, kSample.size());
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::kMalformedMessage);
  }
}

TEST(TensorProto, RejectsTruncatedLengthAndLengthBeyondInput) {
  std::vector<std::byte> bytes = serialize_ok({"abc"});  // count, len, "abc": 19 bytes
  expect_malformed(deserialize_exact(bytes, 12, 1), "cannot fit");
  std::vector<std::byte> two = serialize_ok({"abc", "d"});  // 8 + 11 + 9 = 28 bytes
  expect_malformed(deserialize_exact(two, 24, 2), "offset 19: truncated length of element 1");
  put_u64(bytes, 8, 4);
  expect_malformed(deserialize_exact(bytes, bytes.size(), 1),
                   "offset 8: length 4 of element 0 runs past the end (3 bytes left)");
}

TEST(TensorProto, RejectsHugeLengthsWithoutAllocating) {
  std::vector<std::byte> bytes = serialize_ok({"abc"});
  put_u64(bytes, 8, UINT64_MAX);
  expect_malformed(deserialize_exact(bytes, bytes.size(), 1), "runs past the end");
  put_u64(bytes, 8, uint64_t{1} << 62);
  expect_malformed(deserialize_exact(bytes, bytes.size(), 1), "runs past the end");
  // A count matching a huge shape must not reserve 2^60 strings.
  std::vector<std::byte> header(8);
  put_u64(header, 0, uint64_t{1} << 60);
  expect_malformed(deserialize_exact(header, header.size(), uint64_t{1} << 60), "cannot fit");
}

TEST(TensorProto, RejectsTrailingBytes) {
  std::vector<std::byte> bytes = serialize_ok(kSample);
  bytes.push_back(std::byte{7});
  expect_malformed(deserialize_exact(bytes, bytes.size(), kSample.size()),
                   "1 trailing bytes after 4 elements");
}

RC_GTEST_PROP(TensorProtoProperty, DeserializeOfSerializeIsIdentity,
              (const std::vector<std::string>& strings)) {
  std::vector<std::byte> out(serialized_strings_size(strings));
  Result<size_t> n = serialize_strings(strings, out);
  RC_ASSERT(n.is_ok());
  RC_ASSERT(*n == out.size());
  auto back = deserialize_strings(out, strings.size());
  RC_ASSERT(back.is_ok());
  RC_ASSERT(*back == strings);
}

// Random or mutated payloads: ok or kMalformedMessage, never an overread; what
// deserializes re-serializes to exactly the input.
RC_GTEST_PROP(TensorProtoProperty, MalformedPayloadFailsCleanly,
              (const std::vector<std::string>& strings)) {
  std::vector<std::byte> bytes(serialized_strings_size(strings));
  RC_ASSERT(serialize_strings(strings, bytes).is_ok());
  int flips = *rc::gen::inRange(0, 4);
  for (int i = 0; i < flips; ++i) {
    size_t at = *rc::gen::inRange<size_t>(0, bytes.size());
    bytes[at] ^= static_cast<std::byte>(*rc::gen::inRange<uint8_t>(1, 255));
  }
  if (*rc::gen::arbitrary<bool>()) bytes.resize(*rc::gen::inRange<size_t>(0, bytes.size() + 2));
  uint64_t expected =
      *rc::gen::arbitrary<bool>() ? strings.size() : *rc::gen::arbitrary<uint64_t>();
  auto r = deserialize_exact(bytes, bytes.size(), expected);
  if (!r.is_ok()) {
    RC_ASSERT(r.status().code() == StatusCode::kMalformedMessage);
    return;
  }
  RC_ASSERT(r->size() == expected);
  std::vector<std::byte> again(serialized_strings_size(*r));
  RC_ASSERT(serialize_strings(*r, again).is_ok());
  RC_ASSERT(again == bytes);
}

}  // namespace
}  // namespace tensorwire::wire
