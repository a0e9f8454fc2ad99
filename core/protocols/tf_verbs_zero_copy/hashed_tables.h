// Hashed tables for the protocol's per-tensor lookups, and the one way to walk
// them in key order.
//
// The rendezvous and the memory manager look a request, a response, a sent
// tensor or a cached meta-data up at every message; on a parameter server of a
// large cluster those tables hold thousands of entries, and an ordered tree
// costs a dozen cache misses (and string compares) per lookup. Lookups go to a
// hash table instead. Every walk whose order is observable — a state digest,
// callbacks run one after another, buffers freed in a loop — goes through
// sorted_entries / sorted_keys, so it visits entries in the order the ordered
// maps these tables replaced did: results, event order and the model
// checker's state digests stay exactly as they were.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tensorwire::tf_verbs {

namespace hashed_detail {

template <typename Entry>
const auto& key_of(const Entry& entry) {
  if constexpr (requires { entry.first; }) {
    return entry.first;
  } else {
    return entry;
  }
}

}  // namespace hashed_detail

// Pointers to the entries of `table` (a hashed map or set), by ascending key.
template <typename Table>
std::vector<const typename Table::value_type*> sorted_entries(const Table& table) {
  std::vector<const typename Table::value_type*> entries;
  entries.reserve(table.size());
  for (const auto& entry : table) entries.push_back(&entry);
  std::sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) {
    return hashed_detail::key_of(*a) < hashed_detail::key_of(*b);
  });
  return entries;
}

// The keys of `table`, ascending (a copy: the caller may erase while walking).
template <typename Table>
std::vector<typename Table::key_type> sorted_keys(const Table& table) {
  std::vector<typename Table::key_type> keys;
  keys.reserve(table.size());
  for (const auto& entry : table) keys.push_back(hashed_detail::key_of(entry));
  std::sort(keys.begin(), keys.end());
  return keys;
}

// Mixes a second word into a hash (boost's hash_combine, 64-bit constant).
inline size_t hash_combine(size_t seed, uint64_t value) {
  return seed ^ (std::hash<uint64_t>{}(value) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// Keys made of a tensor name and a number — (name, step_id) for the tag-match
// tables, (rank, name) for the meta-data cache — looked up by a string_view of
// the name: a lookup at every message makes no string. `Key` is the stored
// pair (one member a std::string), `View` the same pair with a string_view.
template <typename Key, typename View>
struct NamedKeyHash {
  using is_transparent = void;
  size_t operator()(const View& k) const {
    if constexpr (std::is_same_v<typename View::first_type, std::string_view>) {
      return hash_combine(std::hash<std::string_view>{}(k.first), k.second);
    } else {
      return hash_combine(std::hash<std::string_view>{}(k.second), k.first);
    }
  }
  size_t operator()(const Key& k) const { return (*this)(View{k.first, k.second}); }
};

template <typename Key, typename View>
struct NamedKeyEqual {
  using is_transparent = void;
  static View view(const Key& k) { return {k.first, k.second}; }
  static const View& view(const View& k) { return k; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return view(a) == view(b);
  }
};

}  // namespace tensorwire::tf_verbs
