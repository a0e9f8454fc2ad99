// The serialized form of a string tensor's content (TensorFlow sent
// non-DMA-able tensors as a TensorProto).
//
// A string tensor cannot be written straight from its storage, so the sender
// serializes it into a registered buffer, RDMA-writes that, and the receiver
// deserializes it. Layout (little-endian):
//   u64 element_count, then per element: u64 length, length bytes.
// The receiver's bytes are untrusted: deserialize_strings() validates every
// length against the input before allocating anything from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace tensorwire::wire {

// Exact serialized size (the meta-data's proto_size / tensor_bytes).
uint64_t serialized_strings_size(const std::vector<std::string>& strings);

// Writes the strings into the front of `out`; returns the bytes written
// (== serialized_strings_size). kInvalidArgument if `out` is too small.
Result<size_t> serialize_strings(const std::vector<std::string>& strings, std::span<std::byte> out);

// Parses a payload spanning all of `in` that must hold exactly
// `expected_elements` strings (the shape's element count). kMalformedMessage,
// naming the element and byte offset, on a count mismatch, a truncated count
// or length, a length beyond the input, or trailing bytes.
Result<std::vector<std::string>> deserialize_strings(std::span<const std::byte> in,
                                                     uint64_t expected_elements);

}  // namespace tensorwire::wire
