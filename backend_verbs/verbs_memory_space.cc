#include "backend_verbs/verbs_memory_space.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend_verbs/cuda_memory.h"
#include "launch/system_call_error.h"

namespace tensorwire::verbs {
namespace {

std::string describe(uint64_t addr, uint64_t length) {
  char text[64];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(addr));
  return std::to_string(length) + " bytes at " + text;
}

// Returns 0 when sysconf cannot say: the caller then falls back to 4 KiB.
size_t system_page_bytes() {
  const long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<size_t>(page) : 0;
}

}  // namespace

VerbsMemorySpace::VerbsMemorySpace() : page_bytes_(system_page_bytes()) {
  if (page_bytes_ == 0) page_bytes_ = 4096;
}

VerbsMemorySpace::~VerbsMemorySpace() {
  for (auto& [addr, block] : blocks_) std::free(block.data);
  for (auto& [addr, block] : device_blocks_) (void)cuda::release(block.device, addr);
}

Result<Buffer> VerbsMemorySpace::allocate(MemoryKind kind, uint32_t device, uint64_t bytes) {
  if (is_device(kind)) {
    Result<uint64_t> addr = cuda::allocate(device, bytes);
    if (!addr) {
      return Status(addr.status().code(), std::string("memory kind ") + memory_kind_name(kind) +
                                              " (GPU " + std::to_string(device) +
                                              "): " + addr.status().message());
    }
    device_blocks_[*addr] = DeviceBlock{bytes, kind, device};
    ++counters_.allocations;
    counters_.allocated_bytes += bytes;
    return Buffer{*addr, bytes, kind, device};
  }
  // Round up to whole pages, at least one; refuse sizes whose rounding overflows.
  const uint64_t page = page_bytes_;
  if (bytes > UINT64_MAX - page) {
    return Status(StatusCode::kOutOfMemory,
                  "cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  }
  const uint64_t rounded = bytes == 0 ? page : (bytes + page - 1) / page * page;
  void* data = nullptr;
  const int rc = posix_memalign(&data, page_bytes_, rounded);
  if (rc != 0) {
    return launch::call_failed(StatusCode::kOutOfMemory,
                       "posix_memalign(" + std::to_string(rounded) + " bytes, " +
                           memory_kind_name(kind) + ")",
                       rc);
  }
  std::memset(data, 0, rounded);
  const uint64_t addr = reinterpret_cast<uint64_t>(data);
  blocks_[addr] = Block{static_cast<std::byte*>(data), bytes, kind};
  ++counters_.allocations;
  counters_.allocated_bytes += bytes;
  return Buffer{addr, bytes, kind, 0};
}

void VerbsMemorySpace::free(const Buffer& buffer) {
  if (auto d = device_blocks_.find(buffer.addr);
      d != device_blocks_.end() && d->second.length == buffer.length) {
    counters_.allocated_bytes -= d->second.length;
    (void)cuda::release(d->second.device, d->first);  // an error here leaks device memory, no more
    device_blocks_.erase(d);
    return;
  }
  auto it = blocks_.find(buffer.addr);
  if (it == blocks_.end() || it->second.length != buffer.length) {
    ++stray_frees_;
    return;
  }
  counters_.allocated_bytes -= it->second.length;
  std::free(it->second.data);
  blocks_.erase(it);
}

Result<std::byte*> VerbsMemorySpace::locate(uint64_t addr, uint64_t length,
                                           const char* what) const {
  auto it = blocks_.upper_bound(addr);
  if (it != blocks_.begin()) {
    --it;
    const Block& b = it->second;
    const uint64_t start = it->first;
    if (addr >= start && length <= b.length && addr - start <= b.length - length) {
      return b.data + (addr - start);
    }
  }
  return Status(StatusCode::kInvalidArgument, std::string(what) + ": " + describe(addr, length) +
                                                  " is not inside a live host allocation");
}

Status VerbsMemorySpace::check_device_range(const Buffer& buffer, uint64_t offset, uint64_t length,
                                            const char* what) const {
  if (offset > buffer.length || length > buffer.length - offset) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(what) + ": " + std::to_string(length) + " bytes at offset " +
                      std::to_string(offset) + " exceed a buffer of " +
                      std::to_string(buffer.length) + " bytes");
  }
  const uint64_t addr = buffer.addr + offset;
  auto it = device_blocks_.upper_bound(addr);
  if (it != device_blocks_.begin()) {
    --it;
    if (addr >= it->first && length <= it->second.length && addr - it->first <= it->second.length - length) {
      return {};
    }
  }
  return Status(StatusCode::kInvalidArgument, std::string(what) + ": " + describe(addr, length) +
                                                  " is not inside a live GPU allocation");
}

Result<std::byte*> VerbsMemorySpace::range(const Buffer& buffer, uint64_t offset, uint64_t length,
                                          const char* what) const {
  if (is_device(buffer.kind)) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(what) + ": memory kind " + memory_kind_name(buffer.kind) + " (GPU " +
                      std::to_string(buffer.device) + ") is not host memory; the CPU cannot touch it");
  }
  if (offset > buffer.length || length > buffer.length - offset) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(what) + ": " + std::to_string(length) + " bytes at offset " +
                      std::to_string(offset) + " exceed a buffer of " +
                      std::to_string(buffer.length) + " bytes");
  }
  return locate(buffer.addr + offset, length, what);
}

std::span<std::byte> VerbsMemorySpace::host_view(const Buffer& buffer) {
  Result<std::byte*> p = range(buffer, 0, buffer.length, "host_view");
  if (!p.is_ok()) return {};
  return {*p, static_cast<size_t>(buffer.length)};
}

Status VerbsMemorySpace::cpu_copy(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                                 uint64_t src_offset, uint64_t bytes) {
  Result<std::byte*> to = range(dst, dst_offset, bytes, "cpu_copy destination");
  if (!to.is_ok()) return to.status();
  Result<std::byte*> from = range(src, src_offset, bytes, "cpu_copy source");
  if (!from.is_ok()) return from.status();
  if (bytes > 0) std::memmove(*to, *from, bytes);
  ++counters_.cpu_copies;
  counters_.cpu_copy_bytes += bytes;
  return {};
}

Status VerbsMemorySpace::write_bytes(const Buffer& buffer, uint64_t offset,
                                    std::span<const std::byte> data) {
  if (is_device(buffer.kind)) {
    if (Status st = check_device_range(buffer, offset, data.size(), "write_bytes"); !st.is_ok()) return st;
    return cuda::copy(buffer.addr + offset, reinterpret_cast<uint64_t>(data.data()), data.size());
  }
  Result<std::byte*> to = range(buffer, offset, data.size(), "write_bytes");
  if (!to.is_ok()) return to.status();
  if (!data.empty()) std::memmove(*to, data.data(), data.size());
  return {};
}

Status VerbsMemorySpace::read_bytes(const Buffer& buffer, uint64_t offset,
                                   std::span<std::byte> out) {
  if (is_device(buffer.kind)) {
    if (Status st = check_device_range(buffer, offset, out.size(), "read_bytes"); !st.is_ok()) return st;
    return cuda::copy(reinterpret_cast<uint64_t>(out.data()), buffer.addr + offset, out.size());
  }
  Result<std::byte*> from = range(buffer, offset, out.size(), "read_bytes");
  if (!from.is_ok()) return from.status();
  if (!out.empty()) std::memmove(out.data(), *from, out.size());
  return {};
}

}  // namespace tensorwire::verbs
