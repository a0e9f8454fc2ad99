#include "backend_verbs/verbs_copy_engine.h"

#include <cstring>
#include <iterator>
#include <vector>
#include <string>
#include <utility>

namespace tensorwire::verbs {

Status VerbsCopyEngine::check(const Buffer& buffer, uint64_t offset, uint64_t bytes,
                             const char* what) const {
  if (is_device(buffer.kind)) {
    Status st = memory_.check_device_range(buffer, offset, bytes, what);
    return st.is_ok() ? st : Status(st.code(), "copy engine: " + st.message());
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

Status VerbsCopyEngine::submit(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                              uint64_t src_offset, uint64_t bytes, CopyDone done) {
  if (Status st = check(dst, dst_offset, bytes, "destination"); !st.is_ok()) return st;
  if (Status st = check(src, src_offset, bytes, "source"); !st.is_ok()) return st;
  if (is_device(dst.kind) || is_device(src.kind)) {
    return submit_device(dst, dst_offset, src, src_offset, bytes, std::move(done));
  }
  queue_.push_back(Copy{dst.addr + dst_offset, src.addr + src_offset, bytes, std::move(done)});
  return {};
}

Status VerbsCopyEngine::submit_device(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                                      uint64_t src_offset, uint64_t bytes, CopyDone done) {
  const uint32_t gpu = is_device(src.kind) ? src.device : dst.device;
  auto stream = streams_.find(gpu);
  if (stream == streams_.end()) {
    Result<std::unique_ptr<cuda::CopyStream>> made = cuda::CopyStream::create(gpu);
    if (!made) return Status(made.status().code(), "copy engine: " + made.status().message());
    stream = streams_.emplace(gpu, std::move(*made)).first;
  }
  const uint64_t token = next_token_++;
  if (Status st = stream->second->submit(dst.addr + dst_offset, src.addr + src_offset, bytes, token);
      !st.is_ok()) {
    return Status(st.code(), "copy engine: " + st.message());
  }
  device_done_[token] = std::move(done);
  stream_tokens_[gpu].push_back(token);
  ++counters_.copies;
  counters_.bytes += bytes;
  return {};
}

// A failed copy breaks its stream: it and every copy after it on that GPU end
// with the error.
uint32_t VerbsCopyEngine::progress_device() {
  uint32_t ran = 0;
  for (auto& [gpu, stream] : streams_) {
    if (stream->pending() == 0) continue;
    Result<std::vector<uint64_t>> finished = stream->poll();
    std::deque<uint64_t>& tokens = stream_tokens_[gpu];
    std::vector<std::pair<uint64_t, Status>> endings;
    if (finished) {
      for (uint64_t token : *finished) {
        endings.emplace_back(token, Status::ok());
        if (!tokens.empty() && tokens.front() == token) tokens.pop_front();
      }
    } else {
      const Status failed(finished.status().code(), "copy engine: " + finished.status().message());
      for (uint64_t token : tokens) endings.emplace_back(token, failed);
      tokens.clear();
      stream = nullptr;  // made again on the next copy to this GPU
    }
    for (auto& [token, st] : endings) {
      auto it = device_done_.find(token);
      if (it == device_done_.end()) continue;
      CopyDone done = std::move(it->second);
      device_done_.erase(it);
      if (done) done(st);
      ++ran;
    }
  }
  for (auto it = streams_.begin(); it != streams_.end();) {
    it = it->second == nullptr ? streams_.erase(it) : std::next(it);
  }
  return ran;
}

uint32_t VerbsCopyEngine::progress() {
  uint32_t ran = progress_device();
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
