// The bytes of a large simulated buffer in timing-only mode, backed a block
// of 256 bytes at a time where they are used, and zero everywhere else.
//
// Why: a control ring is slots of the longest message (1.3 KiB for the
// zero-copy protocol's 512-byte name field), and a message of a hundred
// bytes lands at the start of each. The ring cycles through every slot, so a
// dense buffer ends up with every page touched: at 1024 nodes the rings were
// 690 MB of the run's 1.25 GB, and on a virtual machine the kernel's first
// touch of a page costs more than the simulation does with it. Backing only
// the blocks a message covers touches a fifth of that.
//
// A span is contiguous: the blocks a request covers are made consecutive in
// storage, copied into a new run when they are not. A run is never moved or
// freed before the whole store is, so an older span still points at valid
// memory, but it is stale once a later request moved its blocks: a caller
// keeps a span only until its next request to the same store (the simulator's
// memory asks for the union first where one operation needs two spans).
//
// forget() makes a range read as zero again and gives its blocks' storage
// back to the store, to be reused by later spans: a receive posted on a ring
// slot hands the slot to the NIC (its bytes are the NIC's until the receive
// completes), so a ring that cycles through its slots keeps storage for the
// messages in it, not for every slot it ever used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace tensorwire::sim {

class SparseBytes {
 public:
  static constexpr uint64_t kBlockBytes = 256;
  // Runs are carved from chunks of at least this size (one allocation each).
  static constexpr uint64_t kChunkBytes = 4096;

  SparseBytes() = default;
  // `size` bytes, all zero, none backed yet.
  explicit SparseBytes(uint64_t size);
  SparseBytes(SparseBytes&&) noexcept = default;
  SparseBytes& operator=(SparseBytes&&) noexcept = default;
  SparseBytes(const SparseBytes&) = delete;
  SparseBytes& operator=(const SparseBytes&) = delete;

  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Bytes [offset, offset + length), contiguous, backed from now on (the
  // blocks never written read as zero). May move those blocks: see above.
  std::span<std::byte> span(uint64_t offset, uint64_t length);
  // Bytes [offset, offset + length) read as zero from now on. A block the
  // range covers whole, or whose bytes outside the range are zero, goes back
  // to the store's free storage; one that still holds other bytes keeps them
  // and has the range zeroed. A span taken before stays valid memory but is
  // stale, as after any request.
  void forget(uint64_t offset, uint64_t length);
  // Block `index`'s bytes (kBlockBytes of them), or empty when it was never
  // backed (or forgotten): all zero.
  std::span<const std::byte> block(uint64_t index) const;
  // Storage taken so far, runs left behind by a move and free runs included (tests).
  uint64_t backed_bytes() const { return backed_bytes_; }
  // Storage given back by forget() and not taken again (tests).
  uint64_t free_bytes() const { return free_bytes_; }

 private:
  // Whether blocks [first, last] are all backed, one after another in storage.
  bool contiguous(uint64_t first, uint64_t last) const;
  // Uninitialized storage for `blocks` consecutive blocks: a free run of
  // that length or longer (split) when there is one, else a chunk's.
  std::byte* take_run(uint64_t blocks);
  // Runs of free storage are kept by length up to this many blocks; a longer
  // one is kept as runs of this length.
  static constexpr uint64_t kMaxFreeRunBlocks = 8;
  // Storage of `blocks` consecutive blocks at `run`, free again.
  void give_back(std::byte* run, uint64_t blocks);
  // Whether block `index`'s bytes outside [lo, hi) (offsets in the block)
  // are all zero.
  bool zero_outside(uint64_t index, uint64_t lo, uint64_t hi) const;

  uint64_t size_ = 0;
  std::vector<std::byte*> block_at_;  // per block: its storage, or null (zero)
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  std::byte* spare_ = nullptr;  // the unused end of the last chunk
  uint64_t spare_bytes_ = 0;
  uint64_t backed_bytes_ = 0;
  // [n]: free runs of n blocks (1 <= n <= kMaxFreeRunBlocks).
  std::vector<std::vector<std::byte*>> free_runs_;
  uint64_t free_bytes_ = 0;
};

}  // namespace tensorwire::sim
