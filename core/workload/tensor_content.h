// The bytes a workload puts in a tensor: a deterministic function of
// (seed, step_id, tensor name), so the receiver can check what arrived without
// a copy of what was sent, and so a stale step's bytes never pass for a new one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tensorwire {

uint64_t content_key(uint64_t seed, uint64_t step_id, std::string_view name);
void fill_content(uint64_t key, std::span<std::byte> out);
// Offset of the first byte of `data` that differs from fill_content(key), or
// data.size() when all match.
size_t first_content_mismatch(uint64_t key, std::span<const std::byte> data);
// The same for a window of the content that starts at any `offset`, so large
// buffers can be filled and checked piece by piece.
void fill_content_at(uint64_t key, uint64_t offset, std::span<std::byte> out);
size_t first_content_mismatch_at(uint64_t key, uint64_t offset, std::span<const std::byte> data);
std::vector<std::string> string_content(uint64_t key, uint64_t elements, uint32_t bytes_each);

}  // namespace tensorwire
