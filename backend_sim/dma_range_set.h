// The in-flight DMA ranges of one rank, found by the DMA's id (to end them)
// and by overlap with a range (to check a free, a deregistration, a CPU
// access or another DMA against them): DmaSanitizer keeps one per rank.
//
// A few ranges in flight, the common case, stay in a vector scanned end to
// end: nothing is cheaper. A parameter server with a write in flight to each
// of a thousand workers made that scan, at every DMA's start and end and at
// every free, cost O(ranges in flight) per event (a third of a 1024-node
// run), so past kIndexFrom ranges the set keeps an index instead: by id in a
// hash map, and by address within size classes (ranges of length in
// (2^(L-1), 2^L] in one ordered set per L), so that a check visits, per
// class, only the ranges that start less than 2^L before the checked range.
// Ranges of one class that do not overlap each other cannot crowd that
// window: it holds at most two that miss. The set goes back to the vector
// once empty.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include <absl/container/btree_set.h>
#include <absl/container/flat_hash_map.h>

#include "core/assert.h"
#include "core/clock.h"

namespace tensorwire::sim {

enum class DmaOpKind : uint8_t { kSend, kRdmaWrite, kRdmaWriteWithImm, kRdmaRead, kCopy };

struct DmaOp {
  DmaOpKind kind = DmaOpKind::kCopy;
  uint32_t initiator = 0;  // the rank that posted it
  uint32_t peer = 0;       // the other end (the initiator itself for a copy)
  uint64_t wr_id = 0;      // the work request's id (0 for a copy)
  TimeNs posted_ns = 0;
};

// One range a DMA reads or writes until it ends.
struct InFlightDma {
  uint64_t addr = 0;
  uint64_t end = 0;  // one past the last byte
  uint64_t id = 0;
  DmaOp op;
  bool write = false;
};

class DmaRangeSet {
 public:
  // Past this many ranges the index pays for itself.
  static constexpr size_t kIndexFrom = 32;

  // Field by field, in place: copying a whole entry built on the stack from
  // smaller stores stalls on store forwarding (it cost most of begin's time).
  void add(uint64_t addr, uint64_t length, uint64_t id, const DmaOp& op, bool write) {
    TW_ASSERT_HOT_MSG(length > 0, "an in-flight range holds bytes");
    if (!indexed_ && linear_.size() + 1 < kIndexFrom) {
      fill(linear_.emplace_back(), addr, length, id, op, write);
      return;
    }
    if (!indexed_) build_index();
    add_indexed(addr, length, id, op, write);
  }

  // Ends `id`'s write range, or every range of it (its read and its write)
  // unless writes_only; returns how many write ranges it ended.
  uint32_t erase(uint64_t id, bool writes_only) {
    return indexed_ ? erase_indexed(id, writes_only) : erase_linear(id, writes_only);
  }

  // Calls f(const InFlightDma&) for every range meeting [addr, end), in an
  // order fixed by the ranges in flight (not by timing).
  template <typename F>
  void for_each_overlapping(uint64_t addr, uint64_t end, F&& f) const {
    if (!indexed_) {
      for (const InFlightDma& e : linear_) {
        if (addr < e.end && e.addr < end) f(e);
      }
      return;
    }
    for (uint64_t classes = nonempty_classes_; classes != 0; classes &= classes - 1) {
      const auto c = static_cast<uint32_t>(std::countr_zero(classes));
      // A range of this class is at most 2^c long: to reach addr it starts
      // after addr - 2^c.
      const uint64_t reach = c >= 63 ? UINT64_MAX : (uint64_t{1} << c) - 1;
      const uint64_t from = addr > reach ? addr - reach : 0;
      const absl::btree_set<std::pair<uint64_t, uint32_t>>& by_addr = by_class_[c];
      for (auto it = by_addr.lower_bound({from, 0}); it != by_addr.end() && it->first < end; ++it) {
        const InFlightDma& e = slots_[it->second];
        if (addr < e.end) f(e);
      }
    }
  }

  size_t size() const { return indexed_ ? indexed_ranges_ : linear_.size(); }
  bool empty() const { return size() == 0; }

 private:
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  static void fill(InFlightDma& e, uint64_t addr, uint64_t length, uint64_t id, const DmaOp& op,
                   bool write) {
    e.addr = addr;
    e.end = addr + length;
    e.id = id;
    e.op.kind = op.kind;
    e.op.initiator = op.initiator;
    e.op.peer = op.peer;
    e.op.wr_id = op.wr_id;
    e.op.posted_ns = op.posted_ns;
    e.write = write;
  }
  static uint32_t size_class(uint64_t length) {
    return std::min<uint32_t>(63, static_cast<uint32_t>(std::bit_width(length - 1)));
  }
  uint32_t erase_linear(uint64_t id, bool writes_only);
  void build_index();
  void add_indexed(uint64_t addr, uint64_t length, uint64_t id, const DmaOp& op, bool write);
  uint32_t erase_indexed(uint64_t id, bool writes_only);
  void erase_slot(uint32_t slot);

  bool indexed_ = false;
  std::vector<InFlightDma> linear_;
  // The index: stable slots (freed ones reused), each id's read and write
  // slot, and per size class the (start, slot) of its ranges.
  std::vector<InFlightDma> slots_;
  std::vector<uint32_t> free_slots_;
  absl::flat_hash_map<uint64_t, std::array<uint32_t, 2>> by_id_;  // id -> {read, write}
  size_t indexed_ranges_ = 0;  // ranges in the index
  std::array<absl::btree_set<std::pair<uint64_t, uint32_t>>, 64> by_class_;
  uint64_t nonempty_classes_ = 0;  // bit c: by_class_[c] holds a range
};

}  // namespace tensorwire::sim
