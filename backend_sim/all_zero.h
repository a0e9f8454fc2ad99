// Whether a run of simulated bytes is all zero, eight bytes at a time: a model
// checker tests the stale blocks of its digest at every state it caches, and
// timing-only memory tests a ring slot's edge blocks at every posted receive;
// a byte at a time cost as much as the work around it in both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace tensorwire::sim {

inline bool all_zero(std::span<const std::byte> bytes) {
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, 8);
    if (word != 0) return false;
  }
  for (; i < bytes.size(); ++i) {
    if (bytes[i] != std::byte{0}) return false;
  }
  return true;
}

}  // namespace tensorwire::sim
