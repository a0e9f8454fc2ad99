#include "backend_sim/dma_range_set.h"

namespace tensorwire::sim {

uint32_t DmaRangeSet::erase_linear(uint64_t id, bool writes_only) {
  // Order does not matter to the checks, and a problem names the ops it
  // finds, whatever their order here: swap-remove.
  uint32_t writes = 0;
  for (size_t i = 0; i < linear_.size();) {
    if (linear_[i].id == id && (linear_[i].write || !writes_only)) {
      writes += linear_[i].write ? 1 : 0;
      linear_[i] = linear_.back();
      linear_.pop_back();
      if (writes_only) return writes;  // a DMA writes one range
    } else {
      ++i;
    }
  }
  return writes;
}

// The vector's ranges move into the index, in their order.
void DmaRangeSet::build_index() {
  TW_ASSERT_HOT(!indexed_ && indexed_ranges_ == 0 && by_id_.empty());
  indexed_ = true;
  for (const InFlightDma& e : linear_) add_indexed(e.addr, e.end - e.addr, e.id, e.op, e.write);
  linear_.clear();
}

void DmaRangeSet::add_indexed(uint64_t addr, uint64_t length, uint64_t id, const DmaOp& op,
                              bool write) {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  fill(slots_[slot], addr, length, id, op, write);
  auto [it, added] = by_id_.try_emplace(id, std::array<uint32_t, 2>{kNoSlot, kNoSlot});
  (void)added;
  TW_ASSERT_HOT_MSG(it->second[write ? 1 : 0] == kNoSlot, "a DMA reads one range and writes one range");
  it->second[write ? 1 : 0] = slot;
  const uint32_t c = size_class(length);
  by_class_[c].insert({addr, slot});
  nonempty_classes_ |= uint64_t{1} << c;
  ++indexed_ranges_;
}

void DmaRangeSet::erase_slot(uint32_t slot) {
  const InFlightDma& e = slots_[slot];
  const uint32_t c = size_class(e.end - e.addr);
  const size_t erased = by_class_[c].erase({e.addr, slot});
  TW_ASSERT_HOT_MSG(erased == 1, "an indexed range is in its size class");
  if (by_class_[c].empty()) nonempty_classes_ &= ~(uint64_t{1} << c);
  free_slots_.push_back(slot);
  --indexed_ranges_;
}

uint32_t DmaRangeSet::erase_indexed(uint64_t id, bool writes_only) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return 0;
  uint32_t writes = 0;
  if (it->second[1] != kNoSlot) {
    erase_slot(std::exchange(it->second[1], kNoSlot));
    writes = 1;
  }
  if (!writes_only && it->second[0] != kNoSlot) erase_slot(std::exchange(it->second[0], kNoSlot));
  if (it->second[0] == kNoSlot && it->second[1] == kNoSlot) by_id_.erase(it);
  if (indexed_ranges_ == 0) {
    // Back to the vector: the index's maps are empty, its slots all free.
    TW_ASSERT_HOT(by_id_.empty() && nonempty_classes_ == 0);
    indexed_ = false;
    slots_.clear();
    free_slots_.clear();
  }
  return writes;
}

}  // namespace tensorwire::sim
