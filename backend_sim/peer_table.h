// One rank's per-peer state (its ends of queue pairs), made on first use and
// never erased, found by peer id in a flat open-addressed table.
//
// Why not std::unordered_map: at a parameter server's rank, talking to a
// thousand peers, nearly every lookup misses the last-pair cache
// (RcTransport::pair_of), and the map's lookup is a modulo by a prime, a
// bucket, then a node, each a dependent load that misses the cache. Here the
// home slot is a multiply and a shift, and the slot holds the value's address.
// Values live in their own allocations, so references stay valid as the
// table grows (RcTransport caches them).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/assert.h"

namespace tensorwire::sim {

template <typename T>
class PeerTable {
 public:
  const T* find(uint32_t peer) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = home(peer);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.value == nullptr) return nullptr;
      if (s.peer == peer) return s.value;
    }
  }
  T* find(uint32_t peer) { return const_cast<T*>(std::as_const(*this).find(peer)); }

  // `peer`'s value, default-constructed the first time it is asked for.
  T& find_or_make(uint32_t peer) {
    if (T* found = find(peer)) return *found;
    if ((values_.size() + 1) * 2 > slots_.size()) grow();
    values_.push_back(std::make_unique<T>());
    insert(peer, values_.back().get());
    TW_ASSERT_HOT(find(peer) == values_.back().get());
    return *values_.back();
  }

  // Values made so far.
  size_t size() const { return values_.size(); }

 private:
  struct Slot {
    uint32_t peer = 0;
    T* value = nullptr;  // null: empty
  };
  static constexpr size_t kFirstSlots = 4;

  // Fibonacci hashing: peers are small consecutive integers, which the
  // multiply spreads over the table's top bits.
  size_t home(uint32_t peer) const {
    return static_cast<size_t>((uint64_t{peer} * 0x9E3779B97F4A7C15ull) >> (64 - bits_));
  }
  void insert(uint32_t peer, T* value) {
    size_t i = home(peer);
    while (slots_[i].value != nullptr) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = {peer, value};
  }
  // Twice the slots (the load stays at most one half), everything placed again.
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t n = old.empty() ? kFirstSlots : old.size() * 2;
    slots_.assign(n, Slot{});
    bits_ = 0;
    while ((size_t{1} << bits_) < n) ++bits_;
    for (const Slot& s : old) {
      if (s.value != nullptr) insert(s.peer, s.value);
    }
  }

  std::vector<Slot> slots_;  // a power of two of them, or none
  uint32_t bits_ = 0;        // log2(slots_.size())
  std::vector<std::unique_ptr<T>> values_;
};

}  // namespace tensorwire::sim
