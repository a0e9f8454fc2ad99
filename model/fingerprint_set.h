// A set of 64-bit state fingerprints: open addressing, linear probing, one
// flat array. The model checker inserts a fingerprint at every choice point
// (random walks count distinct states, dfs's state cache cuts on them), so
// millions of inserts per search; std::unordered_set's node per element and
// its rehashing cost more than the executions' own bookkeeping did
// (docs/PERFORMANCE.md, issue 26 part 5). The slot is taken from the high
// bits of a multiplicative hash, so a fingerprint with weak low bits still
// spreads.
#pragma once

#include <bit>
#include <cstdint>
#include <iterator>
#include <vector>

namespace tensorwire::model {

class FingerprintSet {
 public:
  // True when `fingerprint` was not in the set before.
  bool insert(uint64_t fingerprint) {
    if (fingerprint == kEmpty) {
      const bool fresh = !has_empty_;
      has_empty_ = true;
      return fresh;
    }
    if ((stored_ + 1) * 4 > slots_.size() * 3) grow();
    uint64_t& slot = slots_[find_slot(fingerprint)];
    if (slot == fingerprint) return false;
    slot = fingerprint;
    ++stored_;
    return true;
  }
  bool contains(uint64_t fingerprint) const {
    if (fingerprint == kEmpty) return has_empty_;
    return !slots_.empty() && slots_[find_slot(fingerprint)] == fingerprint;
  }
  // A random walk's fingerprints, one per choice point: the table is sized
  // for all of them first, and each one's slot is fetched from memory a few
  // inserts ahead (in a table of millions, nearly every insert misses the
  // caches).
  template <typename It>
  void insert(It first, It last) {
    if constexpr (std::random_access_iterator<It>) {
      const size_t n = static_cast<size_t>(last - first);
      while ((stored_ + n + 1) * 4 > slots_.size() * 3) grow();
      for (size_t i = 0; i < n; ++i) {
        if (i + kPrefetchAhead < n) __builtin_prefetch(&slots_[home_slot(first[i + kPrefetchAhead])]);
        insert(first[i]);
      }
    } else {
      for (; first != last; ++first) insert(*first);
    }
  }
  size_t size() const { return stored_ + (has_empty_ ? 1 : 0); }
  bool empty() const { return size() == 0; }
  // Every fingerprint, in no particular order.
  std::vector<uint64_t> values() const {
    std::vector<uint64_t> out;
    out.reserve(size());
    if (has_empty_) out.push_back(kEmpty);
    for (uint64_t v : slots_) {
      if (v != kEmpty) out.push_back(v);
    }
    return out;
  }

 private:
  static constexpr uint64_t kEmpty = 0;  // an empty slot; 0 itself is kept aside
  static constexpr size_t kPrefetchAhead = 8;

  // Where `fingerprint`'s probe starts (slots_ is not empty).
  size_t home_slot(uint64_t fingerprint) const {
    return static_cast<size_t>((fingerprint * 0x9e3779b97f4a7c15ull) >> shift_);
  }

  // The slot holding `fingerprint`, or the empty one where it would go.
  size_t find_slot(uint64_t fingerprint) const {
    const size_t mask = slots_.size() - 1;
    size_t i = home_slot(fingerprint);
    while (slots_[i] != kEmpty && slots_[i] != fingerprint) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<uint64_t> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, kEmpty);
    shift_ = 64 - static_cast<uint32_t>(std::countr_zero(slots_.size()));
    for (uint64_t v : old) {
      if (v != kEmpty) slots_[find_slot(v)] = v;
    }
  }

  std::vector<uint64_t> slots_;  // a power of two in size, at most 3/4 full
  uint32_t shift_ = 64;          // 64 - log2(slots_.size())
  size_t stored_ = 0;            // non-empty slots
  bool has_empty_ = false;       // 0 was inserted
};

}  // namespace tensorwire::model
