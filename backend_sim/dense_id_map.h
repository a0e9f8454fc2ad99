// A map from ids handed out in increasing order (work request sequence
// numbers, registration indices) to values, for tables that live as long as
// a simulation and are looked up at every event. Values sit in chunks of
// 2^kChunkBits consecutive ids, found by the id's high bits: a lookup is one
// vector index and one access to the value, where a hash map costs a hash, a
// bucket and a node (two or three cache misses once a parameter server holds
// thousands of entries). A chunk is freed once every id in it that was
// inserted has been erased, so memory follows what is live plus one pointer
// per chunk of ids ever used. The chunk of the newest id stays even when
// empty: a table whose one live entry comes and goes (a work request at a
// time) must not allocate a chunk per entry. One freed chunk is kept as a
// spare for the next chunk of ids: every chunk is emptied before it goes, so
// the spare is ready as it is, where a new one is allocated and zeroed
// (a chunk of the ledger's work requests is 14 KiB, taken every 256 posts).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/assert.h"

namespace tensorwire::sim {

template <typename T, uint32_t kChunkBits = 8>
class DenseIdMap {
 public:
  static constexpr uint64_t kChunkIds = uint64_t{1} << kChunkBits;

  // `id` is not in the map. Returns the stored value.
  T& insert(uint64_t id, T value) {
    const uint64_t c = id >> kChunkBits;
    if (c >= chunks_.size()) chunks_.resize(c + 1);
    TW_ASSERT_HOT_MSG(c >= newest_chunk_, "ids are handed out in increasing order");
    if (c > newest_chunk_) {
      // Moving on: the old newest chunk goes if nothing in it is live.
      std::unique_ptr<Chunk>& old = chunks_[newest_chunk_];
      if (old && old->live == 0) retire(old);
      newest_chunk_ = c;
    }
    if (!chunks_[c]) chunks_[c] = fresh_chunk();
    Chunk& chunk = *chunks_[c];
    std::optional<T>& slot = chunk.values[id & (kChunkIds - 1)];
    TW_ASSERT_HOT_MSG(!slot.has_value(), "an id is inserted once");
    slot.emplace(std::move(value));
    ++chunk.live;
    ++size_;
    return *slot;
  }
  T* find(uint64_t id) {
    const uint64_t c = id >> kChunkBits;
    if (c >= chunks_.size() || !chunks_[c]) return nullptr;
    std::optional<T>& slot = chunks_[c]->values[id & (kChunkIds - 1)];
    return slot.has_value() ? &*slot : nullptr;
  }
  const T* find(uint64_t id) const { return const_cast<DenseIdMap*>(this)->find(id); }
  // False when `id` is not in the map.
  bool erase(uint64_t id) {
    const uint64_t c = id >> kChunkBits;
    if (c >= chunks_.size() || !chunks_[c]) return false;
    Chunk& chunk = *chunks_[c];
    std::optional<T>& slot = chunk.values[id & (kChunkIds - 1)];
    if (!slot.has_value()) return false;
    slot.reset();
    TW_ASSERT_HOT(chunk.live > 0 && size_ > 0);
    --size_;
    if (--chunk.live == 0 && c != newest_chunk_) retire(chunks_[c]);
    return true;
  }
  size_t size() const { return size_; }
  // Whether an emptied chunk is kept for the next chunk of ids (for tests).
  bool has_spare() const { return spare_ != nullptr; }
  // Chunks holding ids now, the spare left out (for tests: memory follows
  // what is live).
  size_t chunks_held() const {
    size_t held = 0;
    for (const auto& chunk : chunks_) held += chunk ? 1 : 0;
    return held;
  }

 private:
  struct Chunk {
    std::array<std::optional<T>, kChunkIds> values;
    uint32_t live = 0;
  };
  // `chunk` holds no live value: it becomes the spare, or is freed when
  // there is one.
  void retire(std::unique_ptr<Chunk>& chunk) {
    TW_ASSERT_HOT_MSG(chunk->live == 0, "only an emptied chunk is retired");
    if (spare_) {
      chunk.reset();
    } else {
      spare_ = std::move(chunk);
    }
  }
  std::unique_ptr<Chunk> fresh_chunk() {
    if (!spare_) return std::make_unique<Chunk>();
    TW_ASSERT_HOT_MSG(spare_->live == 0, "the spare chunk holds nothing");
    return std::move(spare_);
  }

  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::unique_ptr<Chunk> spare_;  // emptied, for the next chunk of ids
  uint64_t newest_chunk_ = 0;  // the chunk of the largest id inserted
  size_t size_ = 0;
};

}  // namespace tensorwire::sim
