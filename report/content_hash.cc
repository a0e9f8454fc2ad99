#include "report/content_hash.h"

#include <array>
#include <cinttypes>
#include <cstdio>

namespace tensorwire::report {

uint64_t fnv1a_64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;  // FNV-1a 64 prime
  }
  return hash;
}

std::string format_hash(uint64_t hash) {
  std::array<char, 24> buf{};
  std::snprintf(buf.data(), buf.size(), "0x%016" PRIx64, hash);
  return buf.data();
}

}  // namespace tensorwire::report
