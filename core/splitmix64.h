// splitmix64: the one small PRNG step the deterministic layers share (tensor
// content, the model checker's strategies and fingerprints, tests). Our own,
// because the standard library's distributions differ between implementations.
#pragma once

#include <cstdint>

namespace tensorwire {

// Advances `state` and returns the next value.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace tensorwire
