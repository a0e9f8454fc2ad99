#include "core/tensor.h"

namespace tensorwire {
namespace {

// Data types are numbered 1..kLastDataType on the wire without gaps; the
// range checks below walk that range.
constexpr uint8_t kLastDataType = 9;
static_assert(static_cast<uint8_t>(DataType::kFloat32) == 1 &&
              static_cast<uint8_t>(DataType::kString) == kLastDataType);

}  // namespace

const char* data_type_name(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat64: return "float64";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kUInt8: return "uint8";
    case DataType::kBool: return "bool";
    case DataType::kString: return "string";
  }
  return "unknown";
}

std::optional<DataType> data_type_from_name(std::string_view name) {
  for (uint8_t raw = 1; raw <= kLastDataType; ++raw) {
    auto dtype = static_cast<DataType>(raw);
    if (name == data_type_name(dtype)) return dtype;
  }
  return std::nullopt;
}

bool is_valid_data_type(uint8_t raw) { return raw >= 1 && raw <= kLastDataType; }

uint32_t data_type_size(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat16: return 2;
    case DataType::kBFloat16: return 2;
    case DataType::kFloat64: return 8;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kUInt8: return 1;
    case DataType::kBool: return 1;
    case DataType::kString: return 0;
  }
  return 0;
}

std::optional<uint64_t> TensorShape::num_elements() const {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    // Overflow checked by the multiplication itself: a division per
    // dimension was a percent of a model checker's execution.
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  }
  return n;
}

std::string TensorShape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

uint64_t total_bytes_of(DataType dtype, const TensorShape& shape) {
  auto n = shape.num_elements();
  return n ? *n * data_type_size(dtype) : 0;
}

uint64_t Tensor::total_bytes() const { return total_bytes_of(dtype, shape); }

}  // namespace tensorwire
