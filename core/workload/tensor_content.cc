#include "core/workload/tensor_content.h"

#include <array>
#include <bit>
#include <cstring>

#include "core/splitmix64.h"

namespace tensorwire {
namespace {

// The content word at index i: computed directly so a check can start anywhere.
uint64_t content_word(uint64_t key, uint64_t i) {
  uint64_t state = key ^ (i * 0xd1b54a32d192ed03ull);
  return splitmix64(state);
}

// A content word as its eight bytes, least significant first, whatever the
// host's byte order (a little-endian host stores the word as it is).
void word_bytes(uint64_t w, std::byte* out) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(out, &w, 8);
  } else {
    for (size_t b = 0; b < 8; ++b) out[b] = static_cast<std::byte>(w >> (8 * b));
  }
}

std::byte content_byte(uint64_t key, uint64_t offset) {
  return static_cast<std::byte>(content_word(key, offset / 8) >> (8 * (offset % 8)));
}

}  // namespace

uint64_t content_key(uint64_t seed, uint64_t step_id, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the name
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  uint64_t state = seed ^ (step_id * 0x9e3779b97f4a7c15ull) ^ h;
  return splitmix64(state);
}

void fill_content(uint64_t key, std::span<std::byte> out) { fill_content_at(key, 0, out); }

size_t first_content_mismatch(uint64_t key, std::span<const std::byte> data) {
  return first_content_mismatch_at(key, 0, data);
}

// Byte by byte up to a word boundary of the content, then a word at a time:
// the harness fills and checks every payload byte, so this loop is hot.
void fill_content_at(uint64_t key, uint64_t offset, std::span<std::byte> out) {
  size_t i = 0;
  for (; i < out.size() && (offset + i) % 8 != 0; ++i) out[i] = content_byte(key, offset + i);
  for (; i + 8 <= out.size(); i += 8) {
    word_bytes(content_word(key, (offset + i) / 8), out.data() + i);
  }
  for (; i < out.size(); ++i) out[i] = content_byte(key, offset + i);
}

size_t first_content_mismatch_at(uint64_t key, uint64_t offset, std::span<const std::byte> data) {
  size_t i = 0;
  for (; i < data.size() && (offset + i) % 8 != 0; ++i) {
    if (data[i] != content_byte(key, offset + i)) return i;
  }
  for (; i + 8 <= data.size(); i += 8) {
    std::array<std::byte, 8> expected{};
    word_bytes(content_word(key, (offset + i) / 8), expected.data());
    if (std::memcmp(expected.data(), data.data() + i, 8) == 0) continue;
    for (size_t b = 0; b < 8; ++b) {
      if (data[i + b] != expected[b]) return i + b;
    }
  }
  for (; i < data.size(); ++i) {
    if (data[i] != content_byte(key, offset + i)) return i;
  }
  return data.size();
}

std::vector<std::string> string_content(uint64_t key, uint64_t elements, uint32_t bytes_each) {
  std::vector<std::string> strings;
  strings.reserve(elements);
  uint64_t state = key;
  for (uint64_t e = 0; e < elements; ++e) {
    std::string s(bytes_each, '\0');
    for (auto& c : s) c = static_cast<char>('a' + splitmix64(state) % 26);
    strings.push_back(std::move(s));
  }
  return strings;
}

}  // namespace tensorwire
