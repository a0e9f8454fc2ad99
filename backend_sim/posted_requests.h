// A queue pair's work requests that are posted and not yet completed, by
// sequence number. A queue pair posts in sequence order and completes in
// posting order, so they form a queue: a deque searched by binary search
// replaces a tree that allocated a node per request (every RDMA operation
// of a simulation passes here, three lookups each).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iterator>
#include <utility>

#include "core/assert.h"
#include "core/nic.h"

namespace tensorwire::sim {

class PostedRequests {
 public:
  using Entry = std::pair<uint64_t, SendWorkRequest>;
  using iterator = std::deque<Entry>::iterator;
  using const_iterator = std::deque<Entry>::const_iterator;

  // `seq` is newer than every request held: sequence numbers only grow.
  void emplace(uint64_t seq, const SendWorkRequest& wr) {
    TW_ASSERT_HOT_MSG(entries_.empty() || entries_.back().first < seq,
                      "requests are posted in sequence order");
    entries_.emplace_back(seq, wr);
  }
  // The oldest (a completion) and the newest (a request going on the wire
  // as it is posted) are looked for most: tried before the search.
  iterator find(uint64_t seq) {
    if (entries_.empty()) return entries_.end();
    if (entries_.front().first == seq) return entries_.begin();
    if (entries_.back().first == seq) return std::prev(entries_.end());
    auto it = lower_bound(entries_.begin(), entries_.end(), seq);
    return it != entries_.end() && it->first == seq ? it : entries_.end();
  }
  size_t count(uint64_t seq) const {
    auto it = lower_bound(entries_.begin(), entries_.end(), seq);
    return it != entries_.end() && it->first == seq ? 1 : 0;
  }
  // Completions come in posting order, so this is nearly always the oldest.
  void erase(iterator it) {
    TW_ASSERT_HOT_MSG(it != entries_.end(), "an erased request is held");
    if (it == entries_.begin()) {
      entries_.pop_front();
    } else {
      entries_.erase(it);
    }
  }
  void clear() { entries_.clear(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  iterator begin() { return entries_.begin(); }
  iterator end() { return entries_.end(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  const Entry& front() const { return entries_.front(); }
  const Entry& back() const { return entries_.back(); }

 private:
  template <typename It>
  static It lower_bound(It first, It last, uint64_t seq) {
    return std::lower_bound(first, last, seq,
                            [](const Entry& e, uint64_t s) { return e.first < s; });
  }
  std::deque<Entry> entries_;
};

}  // namespace tensorwire::sim
