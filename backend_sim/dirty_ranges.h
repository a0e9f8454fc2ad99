// The bytes of a zeroed run (zeroed_bytes.h) that may no longer be zero, as a
// few ranges: what ZeroedBytesPool zeroes again before it hands the run out.
// One bounding range made a control ring with a message in each of ten slots
// (a hundred bytes every kilobyte) cost ten kilobytes of zeroing per ring per
// model-checker execution; ranges cost the hundred bytes each.
//
// Conservative by construction: every byte added is inside some range. Past
// kMaxRanges the new bytes widen the range nearest to them, so a run written
// all over degrades to what one bounding range cost.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "core/assert.h"

namespace tensorwire::sim {

class DirtyRanges {
 public:
  static constexpr size_t kMaxRanges = 8;

  // [begin, end) may no longer be zero.
  void add(uint64_t begin, uint64_t end) {
    TW_ASSERT_HOT_MSG(begin <= end, "a dirty range runs forward");
    if (begin == end) return;
    for (size_t i = 0; i < count_; ++i) {
      Range& r = ranges_[i];
      if (begin <= r.end && r.begin <= end) {  // overlapping or touching
        r.begin = std::min(r.begin, begin);
        r.end = std::max(r.end, end);
        return;
      }
    }
    if (count_ < kMaxRanges) {
      ranges_[count_++] = {begin, end};
      return;
    }
    Range& nearest = *std::min_element(ranges_.begin(), ranges_.end(),
                                       [begin, end](const Range& a, const Range& b) {
                                         return gap(a, begin, end) < gap(b, begin, end);
                                       });
    nearest.begin = std::min(nearest.begin, begin);
    nearest.end = std::max(nearest.end, end);
  }
  // Writes zeros over every range (clipped to `bytes`).
  void zero(std::span<std::byte> bytes) const {
    for (size_t i = 0; i < count_; ++i) {
      const uint64_t end = std::min<uint64_t>(ranges_[i].end, bytes.size());
      if (ranges_[i].begin < end) std::memset(bytes.data() + ranges_[i].begin, 0, end - ranges_[i].begin);
    }
  }
  // Whether [begin, end) lies inside one range (for tests).
  bool covers(uint64_t begin, uint64_t end) const {
    for (size_t i = 0; i < count_; ++i) {
      if (ranges_[i].begin <= begin && end <= ranges_[i].end) return true;
    }
    return begin == end;
  }

 private:
  struct Range {
    uint64_t begin = 0;
    uint64_t end = 0;
  };
  static uint64_t gap(const Range& r, uint64_t begin, uint64_t end) {
    return begin >= r.end ? begin - r.end : r.begin - end;
  }
  std::array<Range, kMaxRanges> ranges_{};
  size_t count_ = 0;
};

}  // namespace tensorwire::sim
