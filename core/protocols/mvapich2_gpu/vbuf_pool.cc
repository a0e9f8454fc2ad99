#include "core/protocols/mvapich2_gpu/vbuf_pool.h"

#include "core/assert.h"

namespace tensorwire::mvapich2 {

VbufPool::VbufPool(RankEnv env, Access access, uint64_t vbuf_bytes, uint32_t count)
    : env_(env), access_(access), vbuf_bytes_(vbuf_bytes), count_(count) {
  TW_ASSERT(vbuf_bytes > 0 && count > 0);
}

VbufPool::~VbufPool() {
  if (region_.length > 0) (void)env_.nic.deregister_memory(region_);
  if (pool_.length > 0) env_.memory.free(pool_);
}

Status VbufPool::ensure() {
  if (region_.length > 0) return {};
  if (pool_.length == 0) {
    Result<Buffer> b = env_.memory.allocate(MemoryKind::kHostPinned, 0, vbuf_bytes_ * count_);
    if (!b) return b.status();
    pool_ = *b;
  }
  Result<MemoryRegion> r = env_.nic.register_memory(pool_, access_);
  if (!r) return r.status();
  region_ = *r;
  busy_.assign(count_, false);
  for (uint32_t i = count_; i > 0; --i) free_.push_back(i - 1);
  return {};
}

std::optional<uint32_t> VbufPool::take() {
  if (free_.empty()) return std::nullopt;
  const uint32_t index = free_.back();
  free_.pop_back();
  busy_[index] = true;
  return index;
}

void VbufPool::give_back(uint32_t index) {
  TW_ASSERT_MSG(index < busy_.size() && busy_[index], "a vbuf goes back once, after it was taken");
  busy_[index] = false;
  // Kept sorted so the lowest free vbuf goes next: runs stay deterministic
  // whatever order vbufs come back in.
  auto it = free_.begin();
  while (it != free_.end() && *it > index) ++it;
  free_.insert(it, index);
}

Buffer VbufPool::vbuf(uint32_t index) const {
  TW_ASSERT(index < count_ && pool_.length > 0);
  return Buffer{pool_.addr + index * vbuf_bytes_, vbuf_bytes_, pool_.kind, 0};
}

bool VbufPool::in_use(uint32_t index) const { return index < busy_.size() && busy_[index]; }

StagingCache::StagingCache(RankEnv env, Access access) : env_(env), access_(access) {}

StagingCache::~StagingCache() {
  for (Entry& e : entries_) {
    if (e.region.length > 0) (void)env_.nic.deregister_memory(e.region);
    env_.memory.free(e.buffer);
  }
}

Result<uint32_t> StagingCache::take(uint64_t bytes) {
  for (uint32_t id = 0; id < entries_.size(); ++id) {
    Entry& e = entries_[id];
    if (!e.busy && e.buffer.length >= bytes) {
      e.busy = true;
      return id;
    }
  }
  Result<Buffer> b = env_.memory.allocate(MemoryKind::kHostPinned, 0, bytes);
  if (!b) return b.status();
  Result<MemoryRegion> r = env_.nic.register_memory(*b, access_);
  if (!r) {
    env_.memory.free(*b);
    return r.status();
  }
  entries_.push_back(Entry{*b, *r, true});
  return static_cast<uint32_t>(entries_.size() - 1);
}

void StagingCache::give_back(uint32_t id) {
  TW_ASSERT_MSG(id < entries_.size() && entries_[id].busy, "a staging buffer goes back once");
  entries_[id].busy = false;
}

size_t StagingCache::in_use() const {
  size_t n = 0;
  for (const Entry& e : entries_) n += e.busy ? 1 : 0;
  return n;
}

}  // namespace tensorwire::mvapich2
