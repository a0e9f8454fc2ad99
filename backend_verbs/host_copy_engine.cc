#include "backend_verbs/host_copy_engine.h"

#include <cstring>
#include <string>
#include <utility>

namespace tensorwire::verbs {

Status HostCopyEngine::check(const Buffer& buffer, uint64_t offset, uint64_t bytes,
                             const char* what) const {
  if (is_device(buffer.kind)) {
    return Status(StatusCode::kUnavailable,
                  std::string("copy engine: ") + what + " in memory kind " +
                      memory_kind_name(buffer.kind) + " (GPU " + std::to_string(buffer.device) +
                      ") needs CUDA, which the verbs backend does not support yet");
  }
  if (offset > buffer.length || bytes > buffer.length - offset) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("copy engine: ") + what + ": " + std::to_string(bytes) +
                      " bytes at offset " + std::to_string(offset) + " exceed a buffer of " +
                      std::to_string(buffer.length) + " bytes");
  }
  Result<std::byte*> p = memory_.locate(buffer.addr + offset, bytes, what);
  if (!p.is_ok()) {
    return Status(p.status().code(), "copy engine: " + p.status().message());
  }
  return {};
}

Status HostCopyEngine::submit(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                              uint64_t src_offset, uint64_t bytes, CopyDone done) {
  if (Status st = check(dst, dst_offset, bytes, "destination"); !st.is_ok()) return st;
  if (Status st = check(src, src_offset, bytes, "source"); !st.is_ok()) return st;
  queue_.push_back(Copy{dst.addr + dst_offset, src.addr + src_offset, bytes, std::move(done)});
  return {};
}

uint32_t HostCopyEngine::progress() {
  uint32_t ran = 0;
  for (size_t n = queue_.size(); n > 0 && !queue_.empty(); --n) {
    Copy copy = std::move(queue_.front());
    queue_.pop_front();
    // Checked again now: the memory may have been freed since submit, which
    // on a real engine would be a use after free; here it is an error.
    Status st;
    Result<std::byte*> to = memory_.locate(copy.dst_addr, copy.bytes, "copy destination");
    Result<std::byte*> from = memory_.locate(copy.src_addr, copy.bytes, "copy source");
    if (!to.is_ok()) {
      st = Status(to.status().code(), "copy engine: " + to.status().message());
    } else if (!from.is_ok()) {
      st = Status(from.status().code(), "copy engine: " + from.status().message());
    } else if (copy.bytes > 0) {
      std::memmove(*to, *from, copy.bytes);
      ++counters_.copies;
      counters_.bytes += copy.bytes;
    }
    if (copy.done) copy.done(st);
    ++ran;
  }
  return ran;
}

}  // namespace tensorwire::verbs
