#include "backend_sim/sparse_bytes.h"

#include <algorithm>
#include <cstring>

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
  const uint64_t bytes = blocks * kBlockBytes;
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

std::span<const std::byte> SparseBytes::block(uint64_t index) const {
  TW_ASSERT_MSG(index < block_at_.size(), "a block of the bytes");
  if (block_at_[index] == nullptr) return {};
  return {block_at_[index], kBlockBytes};
}

}  // namespace tensorwire::sim
