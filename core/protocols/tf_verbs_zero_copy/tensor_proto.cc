#include "core/protocols/tf_verbs_zero_copy/tensor_proto.h"

#include <utility>

#include "core/assert.h"

namespace tensorwire::wire {

namespace {

constexpr uint64_t kCountBytes = 8;
constexpr uint64_t kLengthBytes = 8;

void put_u64(std::span<std::byte> out, size_t at, uint64_t v) {
  TW_ASSERT_MSG(at <= out.size() && out.size() - at >= 8, "serialize_strings sized the output first");
  for (size_t i = 0; i < 8; ++i) out[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

// Caller checked that 8 bytes remain at `at`.
uint64_t get_u64(std::span<const std::byte> in, size_t at) {
  TW_ASSERT(at <= in.size() && in.size() - at >= 8);
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(in[at + i]) << (8 * i);
  return v;
}

Status malformed(const std::string& what, size_t at) {
  return {StatusCode::kMalformedMessage,
          "string tensor payload at offset " + std::to_string(at) + ": " + what};
}

}  // namespace

uint64_t serialized_strings_size(const std::vector<std::string>& strings) {
  uint64_t size = kCountBytes;
  for (const std::string& s : strings) size += kLengthBytes + s.size();
  return size;
}

Result<size_t> serialize_strings(const std::vector<std::string>& strings,
                                 std::span<std::byte> out) {
  uint64_t size = serialized_strings_size(strings);
  if (out.size() < size) {
    return Status(StatusCode::kInvalidArgument, "serialized strings need " + std::to_string(size) +
                                                    " bytes, output has " +
                                                    std::to_string(out.size()));
  }
  size_t at = 0;
  put_u64(out, at, strings.size());
  at += kCountBytes;
  for (const std::string& s : strings) {
    put_u64(out, at, s.size());
    at += kLengthBytes;
    for (char c : s) out[at++] = static_cast<std::byte>(c);
  }
  TW_ASSERT_MSG(at == size, "serialized_strings_size() is the exact size written");
  return at;
}

Result<std::vector<std::string>> deserialize_strings(std::span<const std::byte> in,
                                                     uint64_t expected_elements) {
  if (in.size() < kCountBytes) {
    return malformed("truncated element count (" + std::to_string(in.size()) + " bytes)", 0);
  }
  uint64_t count = get_u64(in, 0);
  if (count != expected_elements) {
    return malformed("element count " + std::to_string(count) + ", shape has " +
                         std::to_string(expected_elements),
                     0);
  }
  size_t at = kCountBytes;
  // Each element takes at least its length prefix: a count the input cannot
  // hold is rejected before anything is allocated from it.
  if (count > (in.size() - at) / kLengthBytes) {
    return malformed("element count " + std::to_string(count) + " cannot fit in " +
                         std::to_string(in.size()) + " bytes",
                     0);
  }
  std::vector<std::string> strings;
  strings.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (in.size() - at < kLengthBytes) {
      return malformed("truncated length of element " + std::to_string(i), at);
    }
    uint64_t length = get_u64(in, at);
    if (length > in.size() - at - kLengthBytes) {
      return malformed("length " + std::to_string(length) + " of element " + std::to_string(i) +
                           " runs past the end (" + std::to_string(in.size() - at - kLengthBytes) +
                           " bytes left)",
                       at);
    }
    at += kLengthBytes;
    std::string s(length, '\0');
    for (size_t j = 0; j < length; ++j) s[j] = static_cast<char>(in[at + j]);
    at += length;
    strings.push_back(std::move(s));
  }
  if (at != in.size()) {
    return malformed(std::to_string(in.size() - at) + " trailing bytes after " +
                         std::to_string(count) + " elements",
                     at);
  }
  TW_ASSERT(strings.size() == count && serialized_strings_size(strings) == in.size());
  return strings;
}

}  // namespace tensorwire::wire
