// A hash of a component's state, built field by field, for model checkers'
// state caches: two states that are equal give equal digests whatever order
// of events led to them (fields go in a fixed order; containers in their
// sorted order). Not a cryptographic hash; a collision merges two states.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/splitmix64.h"

namespace tensorwire {

class StateDigest {
 public:
  StateDigest& add(uint64_t v) {
    uint64_t state = h_ + v * 0xd1b54a32d192ed03ull;
    h_ = splitmix64(state);
    return *this;
  }
  StateDigest& add(std::string_view s) {
    add(s.size());
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t word = 0;
      std::memcpy(&word, s.data() + i, 8);
      add(word);
    }
    uint64_t tail = 0;
    // An empty view may have no data at all: memcpy from null is undefined
    // even for 0 bytes.
    if (i < s.size()) std::memcpy(&tail, s.data() + i, s.size() - i);
    return add(tail);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0;
};

// A component's digest kept between digests until the component changes
// (most events leave most components as they were): invalidate() at every
// change, value(afresh) at every digest, afresh(StateDigest&) adding the
// whole state when the kept value is stale. Both const: a digest is taken of
// a const component, and a const method may mark bytes it hands out as written.
class CachedStateDigest {
 public:
  void invalidate() const { valid_ = false; }
  template <typename Afresh>
  uint64_t value(Afresh&& afresh) const {
    if (!valid_) {
      StateDigest d;
      afresh(d);
      value_ = d.value();
      valid_ = true;
    }
    return value_;
  }

 private:
  mutable bool valid_ = false;
  mutable uint64_t value_ = 0;
};

}  // namespace tensorwire
