// One simulated rank's memory. Addresses are deterministic and, in a plain
// run, never reused (a late write into freed memory cannot hit a new buffer
// by accident); under the model checker (SimOptions::adversarial_memory)
// freed memory is poisoned and reused first, so that such a write does. In
// payload mode every allocation holds real bytes. In timing-only mode an
// allocation gets bytes only when the CPU looks at it (host_view) or a message
// lands in it, and only up to kTimingOnlyBytesMax: control rings and message
// buffers keep their meaning, tensors cost nothing.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "backend_sim/dense_id_map.h"
#include "backend_sim/dirty_ranges.h"
#include "backend_sim/sim_context.h"
#include "backend_sim/sparse_bytes.h"
#include "backend_sim/zeroed_bytes.h"
#include "core/memory.h"
#include "core/state_digest.h"

namespace tensorwire::sim {

class SimMemorySpace;

// Bytes the NIC read from one rank's memory at one instant, to be placed
// later (when they land): a move-only handle on SimMemorySpace::hold_read's
// record, which it releases. Empty when the range held no bytes.
class HeldBytes {
 public:
  HeldBytes() = default;
  HeldBytes(SimMemorySpace& memory, uint64_t id, uint64_t length)
      : memory_(&memory), id_(id), length_(length) {}
  HeldBytes(HeldBytes&& other) noexcept { *this = std::move(other); }
  HeldBytes& operator=(HeldBytes&& other) noexcept {
    if (this != &other) {
      reset();
      memory_ = std::exchange(other.memory_, nullptr);
      id_ = other.id_;
      length_ = other.length_;
    }
    return *this;
  }
  HeldBytes(const HeldBytes&) = delete;
  HeldBytes& operator=(const HeldBytes&) = delete;
  ~HeldBytes() { reset(); }

  // How many bytes are held (0: none).
  uint64_t size() const { return memory_ == nullptr ? 0 : length_; }
  // The bytes as they were when the NIC read them.
  std::span<const std::byte> bytes() const;
  // Inline: an arrival's handle is moved and destroyed several times per
  // message, holding nothing in timing-only runs.
  void reset() {
    if (memory_ != nullptr) release();
  }

 private:
  void release();  // gives the held read back to its memory
  SimMemorySpace* memory_ = nullptr;
  uint64_t id_ = 0;
  uint64_t length_ = 0;
};

class SimMemorySpace final : public MemorySpace {
 public:
  SimMemorySpace(SimContext& context, uint32_t rank);
  // Gives the bytes of what is still allocated back to the thread's
  // ZeroedBytesPool.
  ~SimMemorySpace() override;
  SimMemorySpace(const SimMemorySpace&) = delete;
  SimMemorySpace& operator=(const SimMemorySpace&) = delete;

  Result<Buffer> allocate(MemoryKind kind, uint32_t device, uint64_t bytes) override;
  void free(const Buffer& buffer) override;
  bool holds_payload() const override { return context_.options.payload; }
  std::span<std::byte> host_view(const Buffer& buffer) override;
  Status cpu_copy(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                  uint64_t src_offset, uint64_t bytes) override;
  Status write_bytes(const Buffer& buffer, uint64_t offset,
                     std::span<const std::byte> data) override;
  Status read_bytes(const Buffer& buffer, uint64_t offset, std::span<std::byte> out) override;

  // The live allocation that contains [addr, addr+length), or null.
  const Buffer* find(uint64_t addr, uint64_t length) const;
  // Bytes at [addr, addr+length) of a live allocation; empty when the range
  // is not inside one allocation or the allocation holds no bytes. With
  // `for_write`, a small allocation in timing-only mode gets its bytes now.
  std::span<std::byte> bytes_at(uint64_t addr, uint64_t length, bool for_write = false);
  // Before one operation takes the spans of two ranges of `length` bytes
  // (a copy): where both lie in one sparse allocation, their union is made
  // contiguous, so that taking the second span cannot move the first one's
  // blocks (sparse_bytes.h). No use of memory is reported: the spans are.
  void join_if_sparse(uint64_t addr_a, uint64_t addr_b, uint64_t length);
  // A receive was posted on [addr, addr+length): until it completes its bytes
  // are the NIC's, and a program reading them races the NIC (verbs leaves
  // them undefined). Timing-only mode's sparse allocations forget them (they
  // read as zero), so that a control ring cycling through its slots keeps
  // storage only for the messages in it. Elsewhere (payload mode, dense
  // allocations) nothing changes. No use of memory is reported: the post is.
  void receive_posted(uint64_t addr, uint64_t length);
  // find() and bytes_at() for reading, in one search of the allocations: what
  // the NIC does for every request it reads from memory.
  struct ReadView {
    bool live = false;            // [addr, addr+length) is inside a live allocation
    std::span<std::byte> bytes;   // empty when that allocation holds no bytes
  };
  ReadView read_view(uint64_t addr, uint64_t length);

  uint64_t live_allocations() const { return allocations_.size(); }
  // Every allocation and its bytes: for model checkers' state caches. Kept
  // between digests until the memory changes: a dfs digests the state at
  // every choice point it expands, and most events leave a rank's memory as
  // it was.
  void digest(StateDigest& d) const;
  uint64_t payload_bytes_held() const { return payload_bytes_; }

  // The NIC reads [addr, addr+length) of a live allocation now and places the
  // bytes later, when they land. Copying them at once would hold a second
  // copy of every large message in flight (a whole tensor per RDMA write), so
  // a large range is copy-on-write: its bytes are copied aside only if the
  // range is about to change (written, copied into, viewed by the CPU, freed)
  // before the handle is released; until then they are read in place. A
  // small range (a control message) is copied at once: cheap, and safe even
  // against a protocol writing through a host view it kept. Either way the
  // bytes delivered are those of the instant of the read. `now` is
  // read_view(addr, now.size()).bytes, taken in this same event (the NIC has
  // just looked the allocation up; a second search would find the same).
  HeldBytes hold_read(uint64_t addr, std::span<std::byte> now);
  std::span<const std::byte> held_bytes(uint64_t id) const;
  void release_read(uint64_t id);
  // Reads held at once copied below this size (control messages, small tensors).
  static constexpr uint64_t kCopyOnWriteMinBytes = 64ull << 10;
  // Held reads whose bytes had to be copied aside (tests watch it).
  uint64_t held_reads_copied() const { return held_reads_copied_; }

  // Largest allocation timing-only mode gives bytes: big enough for a control
  // ring of the largest control_ring_size a protocol accepts (4096 slots of
  // the largest message), small enough that no tensor-sized buffer is ever materialized by accident.
  static constexpr uint64_t kTimingOnlyBytesMax = 8ull << 20;
  // Timing-only mode backs an allocation this large or larger where it is
  // used (sparse_bytes.h): a control ring's slots, each with a short message
  // at its start, would otherwise have every page touched.
  static constexpr uint64_t kSparseMinBytes = 16ull << 10;

 private:
  // Content hashes for digest(), kept per block of kDigestBlockBytes as a
  // sum over the blocks (so one block's change updates it in O(1)), and
  // recomputed only for the blocks written since: a state is digested at
  // every choice point dfs expands, and most events write a few bytes of one
  // buffer (a control message into its ring slot).
  static constexpr uint64_t kDigestBlockBytes = 256;
  // An allocation's bytes and what is kept about them. Apart from the
  // allocation, and made only when it has bytes: in timing-only mode most
  // allocations never do (a 1024-node parameter server has about 260,000,
  // tensors and pooled buffers), and these fields are most of a record.
  struct AllocationBytes {
    ZeroedBytes bytes;  // dense bytes (payload mode; small timing-only allocations)
    // Timing-only mode's large allocations (kSparseMinBytes or more: control
    // rings, message buffers) instead of `bytes`: backed where used
    // (sparse_bytes.h).
    SparseBytes sparse;
    uint64_t content_sum = 0;                // sum of block_terms
    std::vector<uint64_t> block_terms;       // per block: its index and content, hashed (0: all zero)
    std::vector<uint8_t> block_stale;        // per block
    std::vector<uint32_t> stale_blocks;      // the blocks with block_stale set
    // The bytes that may not be zero: what has to be zeroed again before
    // the pool hands the vector out.
    DirtyRanges dirty;
  };
  struct Allocation {
    Buffer buffer;
    // Null while it holds no bytes (timing-only mode, until materialized).
    // Mutable: a lookup may back sparse blocks, a digest updates the tables.
    mutable std::unique_ptr<AllocationBytes> held;

    // Whether the allocation holds its bytes (dense or sparse); one of no
    // bytes holds them all.
    bool has_bytes() const { return held != nullptr || buffer.length == 0; }
    uint64_t bytes_held() const { return has_bytes() ? buffer.length : 0; }
    // Bytes [offset, offset + length) of an allocation that has them: a
    // caller keeps the span only until its next lookup of this allocation
    // (a sparse one may move blocks to make a later span contiguous).
    std::span<std::byte> at(uint64_t offset, uint64_t length) const {
      TW_ASSERT_HOT_MSG(has_bytes(), "only an allocation holding bytes is read or written");
      if (held == nullptr) return {};  // no bytes to hold
      if (!held->sparse.empty()) return held->sparse.span(offset, length);
      // The allocation's bytes are this memory's to hand out.
      return {const_cast<std::byte*>(held->bytes.data()) + offset, length};
    }
    // Its sparse bytes, or null (dense, or no bytes).
    SparseBytes* sparse() const {
      return held != nullptr && !held->sparse.empty() ? &held->sparse : nullptr;
    }
  };
  // Bytes [offset, offset + length) of `a` may change: they may no longer be
  // zero, and their blocks are hashed again at the next digest (only under a
  // model checker: a plain simulation never digests and keeps no tables).
  void mark_written(const Allocation& a, uint64_t offset, uint64_t length) const {
    if (length == 0) return;
    digest_.invalidate();
    TW_ASSERT_HOT_MSG(a.held != nullptr, "only an allocation holding bytes is written");
    a.held->dirty.add(offset, offset + length);
    if (context_.events.digesting() && context_.options.state_digests) track_written(a, offset, length);
  }
  // `a`'s bytes, zeroed where written, go back to the thread's pool.
  static void give_back_bytes(Allocation& a);
  static void track_written(const Allocation& a, uint64_t offset, uint64_t length);
  static std::span<const std::byte> block_content(const Allocation& a, uint32_t b);
  void check_overlap(const Buffer& buffer) const;
  Status check_range(const Buffer& buffer, uint64_t offset, uint64_t bytes,
                     const char* what) const;
  Allocation* find_allocation(const Buffer& buffer);
  // The live allocation holding all of [addr, addr+length), or null.
  const Allocation* containing(uint64_t addr, uint64_t length) const;
  Allocation* containing(uint64_t addr, uint64_t length);
  bool materialize(Allocation& a);
  // Counts `bytes` more payload held by this rank and by all ranks together.
  void add_payload_bytes(uint64_t bytes);
  Status check_payload_limits(uint64_t bytes) const;
  // The bytes of live memory at [addr, addr+length), without reporting a use
  // (a held read's bytes are not an event's): empty when they are not there.
  std::span<std::byte> raw_bytes(uint64_t addr, uint64_t length) const;
  // [addr, addr+length) is about to change or go away: every held read that
  // overlaps it and still reads in place gets its bytes copied aside now.
  void preserve_held(uint64_t addr, uint64_t length);

  struct HeldRead {
    uint64_t addr = 0;
    uint64_t length = 0;
    bool copied = false;
    std::vector<std::byte> copy;  // the bytes, once copied aside
  };

  // The last few answers of containing(): allocation `a` is the one with
  // the greatest start at or below any address in [begin, end), where end is
  // the next allocation's start. Consecutive lookups mostly land in an
  // allocation just looked up (a ring slot written, then decoded; a send
  // buffer filled, then read by the NIC), and a parameter server's map holds
  // thousands. allocate() cuts a range that a new allocation starts in;
  // free() drops the freed allocation's entry.
  struct RecentLookup {
    uint64_t begin = 0;
    uint64_t end = 0;  // empty: begin == end
    const Allocation* a = nullptr;
  };
  static constexpr size_t kRecentLookups = 4;
  void forget_lookups_of(const Allocation* a);
  void cut_lookups_at(uint64_t start);

  SimContext& context_;
  uint32_t rank_;
  std::map<uint64_t, Allocation> allocations_;  // by address
  // The same allocations' starts, sorted, and where each one is: what
  // containing() searches. A parameter server's rank holds thousands of
  // allocations, and a search down the map's nodes missed the cache at
  // every level (5 % of a 1024-node run); the starts are one array.
  // A freed allocation leaves its start with a null entry (a tombstone)
  // until they are half the index: a parameter server frees buffers among
  // thousands of live ones, and erasing each at once moved half the index.
  std::vector<uint64_t> starts_;
  std::vector<const Allocation*> at_start_;
  size_t tombstones_ = 0;
  void index_allocation(const Allocation& a);
  void unindex_allocation(const Allocation& a);
  mutable std::array<RecentLookup, kRecentLookups> recent_{};
  mutable uint32_t recent_next_ = 0;  // the entry the next miss replaces
  std::vector<uint64_t> next_addr_;              // per address region (host, gpu0, gpu1, ...)
  // Adversarial mode only: freed ranges (address -> aligned bytes), per
  // address region, reused lowest address first.
  std::vector<std::map<uint64_t, uint64_t>> freed_;
  // A freed range that fits `size` bytes in `region`, taken out of freed_; 0: none.
  uint64_t reuse_freed(size_t region, uint64_t size);
  uint64_t payload_bytes_ = 0;
  // By id (handed out in increasing order), in chunks of 32: a model
  // checker's execution holds a few reads per rank, a parameter server
  // thousands at once.
  DenseIdMap<HeldRead, 5> held_;
  std::vector<uint64_t> in_place_;     // the ids in held_ not copied aside (any order)
  uint64_t next_held_id_ = 1;
  uint64_t held_reads_copied_ = 0;
  // digest()'s value while nothing changed since (allocate, free and every
  // write invalidate it).
  void digest_afresh(StateDigest& d) const;
  CachedStateDigest digest_;
};

}  // namespace tensorwire::sim
