// Tensors as the transfer protocols see them: a data type, a shape, and either
// a buffer (DMA-able types) or a list of strings (DT_STRING, which must be
// serialized to cross the wire).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/memory.h"

namespace tensorwire {

// The longest tensor name (the rendezvous key) any protocol must carry: the
// fixed 512-byte name field of TensorFlow's verbs message, the tightest of the
// source designs. Scenarios are held to it, so every protocol can send every
// scenario's names.
inline constexpr size_t kMaxTensorNameBytes = 512;

enum class DataType : uint8_t {
  kFloat32 = 1,
  kFloat16 = 2,
  kBFloat16 = 3,
  kFloat64 = 4,
  kInt32 = 5,
  kInt64 = 6,
  kUInt8 = 7,
  kBool = 8,
  kString = 9,
};

const char* data_type_name(DataType dtype);
std::optional<DataType> data_type_from_name(std::string_view name);
// Bytes per element; 0 for kString (variable).
uint32_t data_type_size(DataType dtype);
// TensorFlow's DataTypeCanUseMemcpy: every type here but strings.
inline bool is_dma_able(DataType dtype) { return dtype != DataType::kString; }
bool is_valid_data_type(uint8_t raw);

struct TensorShape {
  std::vector<int64_t> dims;

  // Product of dims; 1 for a scalar, 0 if any dim is 0. nullopt on a negative
  // dim or overflow.
  std::optional<uint64_t> num_elements() const;
  std::string to_string() const;  // "[3,224,224]"
  friend bool operator==(const TensorShape&, const TensorShape&) = default;
};

// Content bytes of a DMA-able tensor of this type and shape (elements *
// element size; 0 for an invalid shape or strings), without building one.
uint64_t total_bytes_of(DataType dtype, const TensorShape& shape);

struct Tensor {
  DataType dtype = DataType::kFloat32;
  TensorShape shape;
  Buffer buffer;                     // DMA-able types: the content (length == total_bytes())
  std::vector<std::string> strings;  // kString: the content, one entry per element
  bool is_dead = false;              // TensorFlow's dead tensor: no content at all

  // Content bytes of a DMA-able tensor (elements * element size).
  uint64_t total_bytes() const;
};

}  // namespace tensorwire
