#include "backend_sim/sim_memory.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>

#include "backend_sim/all_zero.h"
#include "backend_sim/zeroed_bytes_pool.h"
#include "core/assert.h"
#include "core/units_format.h"

namespace tensorwire::sim {
namespace {

constexpr uint64_t kRegionSpan = 1ull << 44;      // address space per region
constexpr uint64_t kMaxAllocationBytes = 1ull << 42;
constexpr uint64_t kAlignment = 256;
// What reused memory holds at first under the adversarial allocator: not
// zeros, so that a protocol reading bytes nobody wrote sees garbage.
constexpr std::byte kPoison{0xd5};

uint64_t aligned_size(uint64_t bytes) {
  // At least one alignment unit so that zero-length buffers get unique addresses.
  return std::max<uint64_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
}

}  // namespace

SimMemorySpace::SimMemorySpace(SimContext& context, uint32_t rank)
    : context_(context), rank_(rank), next_addr_(1 + context.cluster.gpus_per_node),
      freed_(next_addr_.size()) {
  for (size_t i = 0; i < next_addr_.size(); ++i) next_addr_[i] = (i + 1) * kRegionSpan;
}

SimMemorySpace::~SimMemorySpace() {
  for (auto& [addr, a] : allocations_) give_back_bytes(a);
}

void SimMemorySpace::give_back_bytes(Allocation& a) {
  if (a.held == nullptr) return;
  ZeroedBytesPool::local().give_back(std::move(a.held->bytes), a.held->dirty);
  a.held.reset();
}

Result<Buffer> SimMemorySpace::allocate(MemoryKind kind, uint32_t device, uint64_t bytes) {
  // Built only for an error: a model checker allocates thousands of buffers a second.
  auto where = [this] { return "rank " + std::to_string(rank_) + ": "; };
  size_t region = 0;
  if (is_device(kind)) {
    if (device >= context_.cluster.gpus_per_node) {
      return Status(StatusCode::kInvalidArgument,
                    where() + "no GPU " + std::to_string(device) + " (node has " +
                        std::to_string(context_.cluster.gpus_per_node) + ")");
    }
    const bool direct = context_.gpu_direct(rank_, device);
    if (direct != (kind == MemoryKind::kDeviceGpuDirect)) {
      return Status(StatusCode::kInvalidArgument,
                    where() + "GPU " + std::to_string(device) +
                        (direct ? " has GPUDirect; allocate kDeviceGpuDirect"
                                : " has no GPUDirect; allocate kDeviceNoGpuDirect"));
    }
    region = 1 + device;
  } else {
    device = 0;
  }
  if (bytes > kMaxAllocationBytes) {
    return Status(StatusCode::kResourceLimit,
                  where() + "allocation of " + std::to_string(bytes) + " bytes is too large");
  }
  if (context_.options.payload) {
    if (Status st = check_payload_limits(bytes); !st.is_ok()) return st;
  }
  const uint64_t size = aligned_size(bytes);
  if (next_addr_[region] + size > (region + 2) * kRegionSpan) {
    return Status(StatusCode::kResourceLimit, where() + "simulated address space exhausted");
  }
  const uint64_t reused = context_.options.adversarial_memory ? reuse_freed(region, size) : 0;
  Buffer buffer{reused != 0 ? reused : next_addr_[region], bytes, kind, device};
  TW_ASSERT(buffer.addr % kAlignment == 0 && size >= bytes);
  // A planted allocator bug (tests of the sanitizer): the next allocation
  // starts one alignment unit after this one, inside it when it is larger.
  if (reused == 0) {
    next_addr_[region] += context_.options.plant_overlapping_allocations ? kAlignment : size;
  }
  context_.events.use(SharedObject::memory(rank_, buffer.addr, size));
  check_overlap(buffer);
  Allocation a{buffer, nullptr};
  if (context_.options.payload) {
    a.held = std::make_unique<AllocationBytes>();
    a.held->bytes = ZeroedBytesPool::local().take(bytes);
    if (reused != 0) {
      std::fill(a.held->bytes.begin(), a.held->bytes.end(), kPoison);
      a.held->dirty.add(0, bytes);
    }
    add_payload_bytes(bytes);
    TW_ASSERT(payload_bytes_ <= context_.options.payload_limit_bytes_per_rank);
  }
  digest_.invalidate();
  cut_lookups_at(buffer.addr);
  const auto [it, fresh] = allocations_.emplace(buffer.addr, std::move(a));
  TW_ASSERT_MSG(fresh, "a live address is never handed out twice");
  index_allocation(it->second);
  return buffer;
}

void SimMemorySpace::index_allocation(const Allocation& a) {
  const uint64_t start = a.buffer.addr;
  // Mostly at the end: a plain run's addresses only grow in each region.
  const auto at = std::upper_bound(starts_.begin(), starts_.end(), start);
  const size_t i = static_cast<size_t>(at - starts_.begin());
  if (i > 0 && starts_[i - 1] == start) {  // a freed start, reused (adversarial mode)
    TW_ASSERT_MSG(at_start_[i - 1] == nullptr && tombstones_ > 0, "a live start is never handed out twice");
    at_start_[i - 1] = &a;
    --tombstones_;
    return;
  }
  at_start_.insert(at_start_.begin() + static_cast<std::ptrdiff_t>(i), &a);
  starts_.insert(at, start);
}

void SimMemorySpace::unindex_allocation(const Allocation& a) {
  const auto at = std::lower_bound(starts_.begin(), starts_.end(), a.buffer.addr);
  const size_t i = static_cast<size_t>(at - starts_.begin());
  TW_ASSERT_MSG(at != starts_.end() && *at == a.buffer.addr && at_start_[i] == &a,
                "every live allocation is in the index of starts");
  at_start_[i] = nullptr;
  if (++tombstones_ * 2 <= starts_.size()) return;
  size_t kept = 0;
  for (size_t j = 0; j < starts_.size(); ++j) {
    if (at_start_[j] == nullptr) continue;
    starts_[kept] = starts_[j];
    at_start_[kept] = at_start_[j];
    ++kept;
  }
  starts_.resize(kept);
  at_start_.resize(kept);
  tombstones_ = 0;
}

// Two live allocations never overlap: the sanitizer reports one that does
// (only a planted allocator bug makes one here, but the rule is the
// allocator's contract with every protocol).
void SimMemorySpace::check_overlap(const Buffer& buffer) const {
  const uint64_t end = buffer.addr + aligned_size(buffer.length);
  auto next = allocations_.lower_bound(buffer.addr);
  if (next != allocations_.end() && next->first < end) {
    context_.sanitizer.on_overlapping_allocation(rank_, buffer.addr, buffer.length, next->first,
                                                 next->second.buffer.length, context_.now());
  }
  if (next == allocations_.begin()) return;
  const Buffer& prev = std::prev(next)->second.buffer;
  if (prev.addr + aligned_size(prev.length) > buffer.addr) {
    context_.sanitizer.on_overlapping_allocation(rank_, buffer.addr, buffer.length, prev.addr,
                                                 prev.length, context_.now());
  }
}

void SimMemorySpace::free(const Buffer& buffer) {
  auto it = allocations_.find(buffer.addr);
  if (it == allocations_.end()) return;
  if (context_.tearing_down) {
    // Only the bytes outlive the world (the thread's pool, for the next
    // execution's allocations); the allocation stays listed, so a second
    // free finds it with nothing left to give back, and the destructor
    // gives back what was never freed. The rest of a free was about 2 % of
    // a random walk's instructions (docs/PERFORMANCE.md).
    give_back_bytes(it->second);
    return;
  }
  context_.sanitizer.on_free(rank_, it->second.buffer.addr, it->second.buffer.length,
                             context_.now());
  context_.events.use(SharedObject::memory(rank_, buffer.addr, aligned_size(it->second.buffer.length)));
  const uint64_t held = it->second.bytes_held();
  preserve_held(it->first, held);
  TW_ASSERT_MSG(payload_bytes_ >= held && context_.payload_bytes_held_total >= held,
                "the bytes held never go negative");
  payload_bytes_ -= held;
  context_.payload_bytes_held_total -= held;
  if (context_.options.adversarial_memory) {
    const uint64_t size = aligned_size(it->second.buffer.length);
    const size_t region = it->first / kRegionSpan - 1;
    TW_ASSERT_MSG(region < freed_.size(), "an allocation lies in one of the rank's regions");
    freed_[region].emplace(it->first, size);
  }
  give_back_bytes(it->second);
  forget_lookups_of(&it->second);
  unindex_allocation(it->second);
  allocations_.erase(it);
  digest_.invalidate();
}

void SimMemorySpace::add_payload_bytes(uint64_t bytes) {
  payload_bytes_ += bytes;
  context_.payload_bytes_held_total += bytes;
}

// Payload mode holds real bytes: a scenario too big for the rank or for the
// machine fails here, with what to do, rather than exhausting the machine.
Status SimMemorySpace::check_payload_limits(uint64_t bytes) const {
  const uint64_t rank_limit_bytes = context_.options.payload_limit_bytes_per_rank;
  const uint64_t total_limit_bytes = context_.options.payload_limit_bytes_total;
  const uint64_t held_bytes = context_.payload_bytes_held_total;
  const bool over_rank = bytes > rank_limit_bytes || payload_bytes_ > rank_limit_bytes - bytes;
  const bool over_total = bytes > total_limit_bytes || held_bytes > total_limit_bytes - bytes;
  if (!over_rank && !over_total) return Status::ok();
  // The messages are built only here: every allocation of a payload run passes by.
  const std::string where = "rank " + std::to_string(rank_) + ": ";
  const std::string ask = "allocating " + format_bytes(bytes) + " (" + std::to_string(bytes) +
                          " bytes)";
  if (over_rank) {
    return Status(StatusCode::kResourceLimit,
                  where + "payload mode holds at most " + std::to_string(rank_limit_bytes) +
                      " bytes per rank; " + ask + " with " + format_bytes(payload_bytes_) +
                      " held would pass it: run this scenario in timing mode");
  }
  return Status(StatusCode::kResourceLimit,
                where + "payload memory limit reached: all ranks together may hold " +
                    format_bytes(total_limit_bytes) + " (" + std::to_string(total_limit_bytes) +
                    " bytes); " + ask + " with " + format_bytes(held_bytes) +
                    " held would pass it: run in timing mode ([run] mode = \"timing\", "
                    "run --timing-only) or raise --memory-limit");
}

std::span<const std::byte> HeldBytes::bytes() const {
  return memory_ == nullptr ? std::span<const std::byte>() : memory_->held_bytes(id_);
}

void HeldBytes::release() {
  memory_->release_read(id_);
  memory_ = nullptr;
}

std::span<std::byte> SimMemorySpace::raw_bytes(uint64_t addr, uint64_t length) const {
  const Allocation* found = containing(addr, length);
  if (found == nullptr || !found->has_bytes()) return {};
  return found->at(addr - found->buffer.addr, length);
}

HeldBytes SimMemorySpace::hold_read(uint64_t addr, std::span<std::byte> now) {
  const uint64_t length = now.size();
  if (length == 0) return {};
  TW_ASSERT_HOT_MSG(raw_bytes(addr, length).data() == now.data(),
                    "a held read is the live bytes at its address");
  HeldRead held{addr, length, false, {}};
  if (length < kCopyOnWriteMinBytes) {
    held.copied = true;
    held.copy.assign(now.begin(), now.end());
  }
  const uint64_t id = next_held_id_++;
  if (!held.copied) in_place_.push_back(id);
  held_.insert(id, std::move(held));
  return HeldBytes(*this, id, length);
}

std::span<const std::byte> SimMemorySpace::held_bytes(uint64_t id) const {
  const HeldRead* found = held_.find(id);
  TW_ASSERT_MSG(found != nullptr, "a held read is released only by its handle");
  const HeldRead& h = *found;
  if (h.copied) return h.copy;
  // Still in place: nothing changed the range, and nothing freed it (free
  // would have copied it aside first).
  const std::span<std::byte> in_place = raw_bytes(h.addr, h.length);
  TW_ASSERT_MSG(in_place.size() == h.length, "a held range stays live until copied aside");
  return in_place;
}

void SimMemorySpace::preserve_held(uint64_t addr, uint64_t length) {
  if (length == 0) return;
  // Only the reads still in place: in a timing-only run every held read is a
  // control message, copied at once, and a parameter server holds thousands.
  for (size_t i = 0; i < in_place_.size();) {
    HeldRead* found = held_.find(in_place_[i]);
    TW_ASSERT_MSG(found != nullptr && !found->copied, "a read listed in place is held, in place");
    HeldRead& h = *found;
    if (h.addr >= addr + length || addr >= h.addr + h.length) {
      ++i;
      continue;
    }
    const std::span<std::byte> in_place = raw_bytes(h.addr, h.length);
    TW_ASSERT_MSG(in_place.size() == h.length, "a held range stays live until copied aside");
    h.copy.assign(in_place.begin(), in_place.end());
    h.copied = true;
    ++held_reads_copied_;
    in_place_[i] = in_place_.back();
    in_place_.pop_back();
  }
}

void SimMemorySpace::release_read(uint64_t id) {
  const HeldRead* found = held_.find(id);
  TW_ASSERT_MSG(found != nullptr, "a held read is released once");
  if (!found->copied) {
    auto at = std::find(in_place_.begin(), in_place_.end(), id);
    TW_ASSERT_MSG(at != in_place_.end(), "a read held in place is listed as such");
    *at = in_place_.back();
    in_place_.pop_back();
  }
  held_.erase(id);
}

// The lowest freed range that holds `size` bytes; what it has left over stays
// free. Deterministic: the same frees give the same addresses.
uint64_t SimMemorySpace::reuse_freed(size_t region, uint64_t size) {
  std::map<uint64_t, uint64_t>& freed = freed_[region];
  for (auto it = freed.begin(); it != freed.end(); ++it) {
    if (it->second < size) continue;
    const uint64_t addr = it->first;
    const uint64_t left = it->second - size;
    freed.erase(it);
    if (left > 0) freed.emplace(addr + size, left);
    TW_ASSERT(addr != 0 && addr % kAlignment == 0);
    return addr;
  }
  return 0;
}

// The allocation that `buffer` is (or is part of): protocols carve pooled
// allocations into smaller buffers, as they would with real pointers.
SimMemorySpace::Allocation* SimMemorySpace::find_allocation(const Buffer& buffer) {
  return containing(buffer.addr, buffer.length);
}

// The one search of the allocations by address: the live allocation holding
// all of [addr, addr+length), or null.
const SimMemorySpace::Allocation* SimMemorySpace::containing(uint64_t addr, uint64_t length) const {
  for (const RecentLookup& r : recent_) {
    if (addr >= r.begin && addr < r.end) {
      return r.a->buffer.contains(addr, length) ? r.a : nullptr;
    }
  }
  TW_ASSERT_HOT(starts_.size() == allocations_.size() + tombstones_ && at_start_.size() == starts_.size());
  const size_t next = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), addr) - starts_.begin());
  const uint64_t next_start = next == starts_.size() ? UINT64_MAX : starts_[next];
  // The live allocation with the greatest start at or below the address,
  // past the tombstones of freed ones (a free lookup of a freed address, or
  // a planted allocator bug's allocation inside a freed one).
  size_t live = next;
  while (live > 0 && at_start_[live - 1] == nullptr) --live;
  if (live == 0) return nullptr;
  const Allocation* a = at_start_[live - 1];
  recent_[recent_next_] = {starts_[live - 1], next_start, a};
  recent_next_ = (recent_next_ + 1) % kRecentLookups;
  return a->buffer.contains(addr, length) ? a : nullptr;
}

void SimMemorySpace::forget_lookups_of(const Allocation* a) {
  for (RecentLookup& r : recent_) {
    if (r.a == a) r = {};
  }
}

void SimMemorySpace::cut_lookups_at(uint64_t start) {
  for (RecentLookup& r : recent_) {
    if (start >= r.begin && start < r.end) r.end = start;
  }
}

SimMemorySpace::Allocation* SimMemorySpace::containing(uint64_t addr, uint64_t length) {
  return const_cast<Allocation*>(std::as_const(*this).containing(addr, length));
}

const Buffer* SimMemorySpace::find(uint64_t addr, uint64_t length) const {
  context_.events.use(SharedObject::memory(rank_, addr, length));
  const Allocation* a = containing(addr, length);
  return a == nullptr ? nullptr : &a->buffer;
}

// Timing-only mode gives an allocation bytes the first time the CPU looks at
// it or a message lands in it, and only when it is small: control rings and
// message buffers get bytes, tensors never do.
bool SimMemorySpace::materialize(Allocation& a) {
  if (a.has_bytes()) return true;
  if (a.buffer.length > kTimingOnlyBytesMax) return false;
  // An allocation holds all of its bytes or none (payload mode: all, from the start).
  TW_ASSERT(a.held == nullptr && !context_.options.payload);
  a.held = std::make_unique<AllocationBytes>();
  if (a.buffer.length >= kSparseMinBytes) {
    a.held->sparse = SparseBytes(a.buffer.length);
  } else {
    a.held->bytes = ZeroedBytesPool::local().take(a.buffer.length);
  }
  add_payload_bytes(a.buffer.length);
  // The bytes changed (there are some now) but are all zero: nothing for the
  // pool to zero again. Marking the whole range written made every free and
  // the teardown zero whole rings, touching the pages calloc had left alone.
  digest_.invalidate();
  if (context_.events.digesting() && context_.options.state_digests) {
    track_written(a, 0, a.buffer.length);
  }
  return true;
}

void SimMemorySpace::track_written(const Allocation& a, uint64_t offset, uint64_t length) {
  if (a.held == nullptr) return;  // no bytes, no blocks
  AllocationBytes& h = *a.held;
  const uint64_t held = a.bytes_held();
  const size_t blocks = (held + kDigestBlockBytes - 1) / kDigestBlockBytes;
  if (h.block_terms.size() != blocks) {  // bytes appeared, all zero: every term is 0
    h.content_sum = 0;
    h.block_terms.assign(blocks, 0);
    h.block_stale.assign(blocks, 0);
    h.stale_blocks.clear();
  }
  if (length == 0 || offset >= held) return;
  const uint64_t last = std::min<uint64_t>(offset + length, held) - 1;
  TW_ASSERT(last / kDigestBlockBytes < blocks);
  for (uint64_t b = offset / kDigestBlockBytes; b <= last / kDigestBlockBytes; ++b) {
    if (h.block_stale[b] != 0) continue;
    h.block_stale[b] = 1;
    h.stale_blocks.push_back(static_cast<uint32_t>(b));
  }
}

std::span<std::byte> SimMemorySpace::bytes_at(uint64_t addr, uint64_t length, bool for_write) {
  context_.events.use(SharedObject::memory(rank_, addr, length));
  Allocation* found = containing(addr, length);
  if (found == nullptr) return {};
  Allocation& a = *found;
  if (!a.has_bytes() && !(for_write && materialize(a))) return {};
  if (for_write) {
    preserve_held(addr, length);
    mark_written(a, addr - a.buffer.addr, length);
  }
  return a.at(addr - a.buffer.addr, length);
}

SimMemorySpace::ReadView SimMemorySpace::read_view(uint64_t addr, uint64_t length) {
  context_.events.use(SharedObject::memory(rank_, addr, length));
  Allocation* a = containing(addr, length);
  if (a == nullptr) return {};
  if (!a->has_bytes()) return {true, {}};
  return {true, a->at(addr - a->buffer.addr, length)};
}

std::span<std::byte> SimMemorySpace::host_view(const Buffer& buffer) {
  if (!is_host(buffer.kind)) return {};
  context_.events.use(SharedObject::memory(rank_, buffer.addr, buffer.length));
  Allocation* a = find_allocation(buffer);
  if (a == nullptr || !materialize(*a)) return {};
  // The caller may write.
  preserve_held(buffer.addr, buffer.length);
  mark_written(*a, buffer.addr - a->buffer.addr, buffer.length);
  return a->at(buffer.addr - a->buffer.addr, buffer.length);
}

Status SimMemorySpace::check_range(const Buffer& buffer, uint64_t offset, uint64_t bytes,
                                   const char* what) const {
  if (containing(buffer.addr, buffer.length) == nullptr) {
    return {StatusCode::kInvalidArgument,
            std::string(what) + ": buffer is not inside a live allocation of rank " +
                std::to_string(rank_)};
  }
  if (offset > buffer.length || bytes > buffer.length - offset) {
    return {StatusCode::kInvalidArgument,
            std::string(what) + ": range [" + std::to_string(offset) + ", +" +
                std::to_string(bytes) + ") outside a buffer of " +
                std::to_string(buffer.length) + " bytes"};
  }
  return {};
}

Status SimMemorySpace::cpu_copy(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                                uint64_t src_offset, uint64_t bytes) {
  if (!is_host(dst.kind) || !is_host(src.kind)) {
    return {StatusCode::kInvalidArgument, "cpu_copy: both buffers must be host memory"};
  }
  context_.events.use(SharedObject::memory(rank_, dst.addr, dst.length));
  context_.events.use(SharedObject::memory(rank_, src.addr, src.length));
  if (Status st = check_range(dst, dst_offset, bytes, "cpu_copy dst"); !st.is_ok()) return st;
  if (Status st = check_range(src, src_offset, bytes, "cpu_copy src"); !st.is_ok()) return st;
  context_.sanitizer.on_cpu_access(rank_, dst.addr, dst_offset, bytes, /*write=*/true, context_.now());
  context_.sanitizer.on_cpu_access(rank_, src.addr, src_offset, bytes, /*write=*/false, context_.now());
  Allocation* d = find_allocation(dst);
  Allocation* s = find_allocation(src);
  TW_ASSERT_MSG(d != nullptr && s != nullptr, "check_range found both inside live allocations");
  if (bytes > 0 && d->bytes_held() > 0 && s->bytes_held() > 0) {
    preserve_held(dst.addr + dst_offset, bytes);
    mark_written(*d, (dst.addr - d->buffer.addr) + dst_offset, bytes);
    if (d == s) join_if_sparse(dst.addr + dst_offset, src.addr + src_offset, bytes);
    const std::span<std::byte> to = d->at((dst.addr - d->buffer.addr) + dst_offset, bytes);
    const std::span<std::byte> from = s->at((src.addr - s->buffer.addr) + src_offset, bytes);
    std::memmove(to.data(), from.data(), bytes);
  }
  context_.stats[rank_].cpu_copy_bytes += bytes;
  context_.stats[rank_].cpu_copies += 1;
  const TimeNs start = context_.cpu_ready_ns(rank_);
  const TimeNs end = context_.charge_cpu(
      rank_,
      transfer_time_ns(static_cast<double>(bytes), context_.cluster.host_memcpy_bandwidth_bytes_per_s),
      "memcpy");
  context_.ledger.add_copy(context_.transfer_tag, rank_, context_.now(), start, end);
  return {};
}

Status SimMemorySpace::write_bytes(const Buffer& buffer, uint64_t offset,
                                   std::span<const std::byte> data) {
  context_.events.use(SharedObject::memory(rank_, buffer.addr, buffer.length));
  if (Status st = check_range(buffer, offset, data.size(), "write_bytes"); !st.is_ok()) return st;
  context_.sanitizer.on_cpu_access(rank_, buffer.addr, offset, data.size(), /*write=*/true,
                                   context_.now());
  Allocation* a = find_allocation(buffer);
  TW_ASSERT_MSG(a != nullptr, "check_range found it inside a live allocation");
  if (!data.empty() && materialize(*a)) {
    preserve_held(buffer.addr + offset, data.size());
    mark_written(*a, (buffer.addr - a->buffer.addr) + offset, data.size());
    std::memcpy(a->at((buffer.addr - a->buffer.addr) + offset, data.size()).data(), data.data(),
                data.size());
  }
  return {};
}

Status SimMemorySpace::read_bytes(const Buffer& buffer, uint64_t offset,
                                  std::span<std::byte> out) {
  context_.events.use(SharedObject::memory(rank_, buffer.addr, buffer.length));
  if (Status st = check_range(buffer, offset, out.size(), "read_bytes"); !st.is_ok()) return st;
  context_.sanitizer.on_cpu_access(rank_, buffer.addr, offset, out.size(), /*write=*/false,
                                   context_.now());
  Allocation* a = find_allocation(buffer);
  TW_ASSERT_MSG(a != nullptr, "check_range found it inside a live allocation");
  if (!a->has_bytes()) {
    return {StatusCode::kUnavailable, "read_bytes: timing-only mode holds no payload"};
  }
  if (!out.empty()) {
    std::memcpy(out.data(), a->at((buffer.addr - a->buffer.addr) + offset, out.size()).data(),
                out.size());
  }
  return {};
}

// Block `b` of the digest's blocks, as many bytes of it as the allocation
// has: a sparse allocation's never-backed block reads as none (all zero).
std::span<const std::byte> SimMemorySpace::block_content(const Allocation& a, uint32_t b) {
  static_assert(kDigestBlockBytes == SparseBytes::kBlockBytes, "one block, one digest term");
  const uint64_t offset = uint64_t{b} * kDigestBlockBytes;
  const uint64_t length = std::min<uint64_t>(kDigestBlockBytes, a.bytes_held() - offset);
  TW_ASSERT(a.held != nullptr);
  const SparseBytes* sparse = a.sparse();
  if (sparse == nullptr) return {a.held->bytes.data() + offset, length};
  const std::span<const std::byte> block = sparse->block(b);
  return block.empty() ? block : block.first(length);
}

void SimMemorySpace::receive_posted(uint64_t addr, uint64_t length) {
  if (context_.options.payload || length == 0) return;  // payload mode is dense throughout
  Allocation* a = containing(addr, length);
  SparseBytes* sparse = a == nullptr ? nullptr : a->sparse();
  if (sparse == nullptr) return;
  // A held read of these bytes (the NIC sending from a buffer also posted
  // as a receive) keeps the bytes it read.
  preserve_held(addr, length);
  mark_written(*a, addr - a->buffer.addr, length);
  sparse->forget(addr - a->buffer.addr, length);
}

void SimMemorySpace::join_if_sparse(uint64_t addr_a, uint64_t addr_b, uint64_t length) {
  if (context_.options.payload || length == 0) return;  // payload mode is dense throughout
  const uint64_t lo = std::min(addr_a, addr_b);
  const uint64_t hi = std::max(addr_a, addr_b) + length;
  const Allocation* a = containing(lo, hi - lo);
  SparseBytes* sparse = a == nullptr ? nullptr : a->sparse();
  if (sparse == nullptr) return;
  sparse->span(lo - a->buffer.addr, hi - lo);
}

void SimMemorySpace::digest(StateDigest& d) const {
  TW_ASSERT_MSG(context_.options.state_digests, "a state digest needs the tracking of written blocks");
  d.add(digest_.value([this](StateDigest& own) { digest_afresh(own); }));
}

void SimMemorySpace::digest_afresh(StateDigest& d) const {
  d.add(allocations_.size());
  for (const auto& [addr, a] : allocations_) {
    d.add(addr).add(a.buffer.length).add(a.bytes_held());
    track_written(a, 0, 0);  // sizes the block tables
    if (a.held == nullptr) {  // no bytes: no blocks, a sum of none
      d.add(uint64_t{0});
      continue;
    }
    AllocationBytes& h = *a.held;
    for (uint32_t b : h.stale_blocks) {
      const std::span<const std::byte> content = block_content(a, b);
      uint64_t term = 0;  // an all-zero block, as allocated
      if (!all_zero(content)) {
        StateDigest block;
        block.add(b).add(std::string_view(reinterpret_cast<const char*>(content.data()), content.size()));
        term = block.value();
      }
      h.content_sum += term - h.block_terms[b];
      h.block_terms[b] = term;
      h.block_stale[b] = 0;
    }
    h.stale_blocks.clear();
    d.add(h.content_sum);
  }
  for (uint64_t next : next_addr_) d.add(next);
  for (const auto& freed : freed_) {
    d.add(freed.size());
    for (const auto& [addr, size] : freed) d.add(addr).add(size);
  }
}

}  // namespace tensorwire::sim
