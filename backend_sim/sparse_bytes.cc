#include "backend_sim/sparse_bytes.h"

#include <algorithm>
#include <cstring>

#include "backend_sim/all_zero.h"
#include "core/assert.h"

namespace tensorwire::sim {

SparseBytes::SparseBytes(uint64_t size)
    : size_(size), block_at_((size + kBlockBytes - 1) / kBlockBytes, nullptr) {}

bool SparseBytes::contiguous(uint64_t first, uint64_t last) const {
  const std::byte* start = block_at_[first];
  if (start == nullptr) return false;
  for (uint64_t b = first + 1; b <= last; ++b) {
    if (block_at_[b] != start + (b - first) * kBlockBytes) return false;
  }
  return true;
}

std::byte* SparseBytes::take_run(uint64_t blocks) {
  TW_ASSERT_HOT(blocks > 0);
  const uint64_t bytes = blocks * kBlockBytes;
  for (uint64_t n = blocks; n < free_runs_.size(); ++n) {
    if (free_runs_[n].empty()) continue;
    std::byte* run = free_runs_[n].back();
    free_runs_[n].pop_back();
    free_bytes_ -= n * kBlockBytes;
    if (n > blocks) give_back(run + bytes, n - blocks);  // the rest stays free
    return run;
  }
  if (spare_bytes_ < bytes) {
    // Uninitialized: a chunk's pages are touched only as runs are carved
    // from it, each run zeroed or copied into as it is taken.
    const uint64_t chunk = std::max(kChunkBytes, bytes);
    chunks_.push_back(std::make_unique_for_overwrite<std::byte[]>(chunk));
    spare_ = chunks_.back().get();
    spare_bytes_ = chunk;
  }
  std::byte* run = spare_;
  spare_ += bytes;
  spare_bytes_ -= bytes;
  backed_bytes_ += bytes;
  return run;
}

std::span<std::byte> SparseBytes::span(uint64_t offset, uint64_t length) {
  TW_ASSERT_HOT_MSG(offset <= size_ && length <= size_ - offset, "a span inside the bytes");
  if (length == 0) return {};
  const uint64_t first = offset / kBlockBytes;
  const uint64_t last = (offset + length - 1) / kBlockBytes;
  if (!contiguous(first, last)) {
    std::byte* run = take_run(last - first + 1);
    for (uint64_t b = first; b <= last; ++b) {
      std::byte* to = run + (b - first) * kBlockBytes;
      if (block_at_[b] != nullptr) {
        std::memcpy(to, block_at_[b], kBlockBytes);
      } else {
        std::memset(to, 0, kBlockBytes);
      }
      block_at_[b] = to;
    }
    TW_ASSERT(contiguous(first, last));
  }
  return {block_at_[first] + offset % kBlockBytes, length};
}

void SparseBytes::give_back(std::byte* run, uint64_t blocks) {
  if (free_runs_.empty()) free_runs_.resize(kMaxFreeRunBlocks + 1);
  while (blocks > 0) {
    const uint64_t n = std::min(blocks, kMaxFreeRunBlocks);
    free_runs_[n].push_back(run);
    free_bytes_ += n * kBlockBytes;
    run += n * kBlockBytes;
    blocks -= n;
  }
}

bool SparseBytes::zero_outside(uint64_t index, uint64_t lo, uint64_t hi) const {
  const std::span<const std::byte> block(block_at_[index], kBlockBytes);
  return all_zero(block.first(lo)) && all_zero(block.subspan(hi));
}

void SparseBytes::forget(uint64_t offset, uint64_t length) {
  TW_ASSERT_MSG(offset <= size_ && length <= size_ - offset, "a range inside the bytes");
  if (length == 0) return;
  const uint64_t first = offset / kBlockBytes;
  const uint64_t last = (offset + length - 1) / kBlockBytes;
  // Blocks released one after another whose storage is consecutive go back
  // as one run, so that a later span of as many blocks can take it.
  std::byte* run = nullptr;
  uint64_t run_blocks = 0;
  for (uint64_t b = first; b <= last; ++b) {
    std::byte* at = block_at_[b];
    if (at == nullptr) continue;
    const uint64_t start = b * kBlockBytes;
    const uint64_t lo = std::max(offset, start) - start;
    const uint64_t hi = std::min(offset + length, start + kBlockBytes) - start;
    if ((lo > 0 || hi < kBlockBytes) && !zero_outside(b, lo, hi)) {
      std::memset(at + lo, 0, hi - lo);  // it keeps the bytes outside the range
      continue;
    }
    block_at_[b] = nullptr;
    if (run != nullptr && at == run + run_blocks * kBlockBytes) {
      ++run_blocks;
      continue;
    }
    if (run != nullptr) give_back(run, run_blocks);
    run = at;
    run_blocks = 1;
  }
  if (run != nullptr) give_back(run, run_blocks);
}

std::span<const std::byte> SparseBytes::block(uint64_t index) const {
  TW_ASSERT_MSG(index < block_at_.size(), "a block of the bytes");
  if (block_at_[index] == nullptr) return {};
  return {block_at_[index], kBlockBytes};
}

}  // namespace tensorwire::sim
