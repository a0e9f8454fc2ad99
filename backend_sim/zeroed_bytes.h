// A fixed-size run of bytes that starts all zero, got from calloc: for a
// large run the allocator hands out fresh pages it knows are zero without
// writing them, and the kernel backs a page only when it is first touched.
// A simulated control ring (a hundred slots of a kilobyte, a message of a
// hundred bytes in each) is then paid for where messages land, not in full
// when the first one does: writing 136 KiB of zeros per ring was 6% of a
// 1024-node run, and its page faults as much again. No resize: a run never
// grows into bytes it wrote before (which would not be zero).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <utility>

namespace tensorwire::sim {

class ZeroedBytes {
 public:
  ZeroedBytes() = default;
  explicit ZeroedBytes(size_t size) : size_(size) {
    if (size == 0) return;
    data_.reset(static_cast<std::byte*>(std::calloc(size, 1)));
    if (!data_) throw std::bad_alloc();
  }
  ZeroedBytes(ZeroedBytes&& other) noexcept
      : data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)) {}
  ZeroedBytes& operator=(ZeroedBytes&& other) noexcept {
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  std::byte* begin() { return data(); }
  std::byte* end() { return data() + size_; }
  const std::byte* begin() const { return data(); }
  const std::byte* end() const { return data() + size_; }
  std::span<std::byte> span() { return {data(), size_}; }
  std::span<const std::byte> span() const { return {data(), size_}; }
  void clear() {
    data_.reset();
    size_ = 0;
  }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte[], Free> data_;
  size_t size_ = 0;
};

}  // namespace tensorwire::sim
