#include "core/protocols/tf_verbs_zero_copy/rdma_tensor_meta_data.h"

#include "core/protocols/tf_verbs_zero_copy/tensor_proto.h"

namespace tensorwire::tf_verbs {

uint64_t RdmaTensorMetaData::byte_size() const {
  if (is_dead) return 0;
  if (data_type == DataType::kString) return proto_size;
  auto n = tensor_shape.num_elements();
  uint64_t element = data_type_size(data_type);
  if (!n || (element != 0 && *n > UINT64_MAX / element)) return 0;
  return *n * element;
}

RdmaTensorMetaData RdmaTensorMetaData::of(const Tensor& tensor) {
  RdmaTensorMetaData meta;
  meta.data_type = tensor.dtype;
  meta.tensor_shape = tensor.shape;
  meta.is_dead = tensor.is_dead;
  if (!tensor.is_dead && tensor.dtype == DataType::kString) {
    meta.proto_size = wire::serialized_strings_size(tensor.strings);
  }
  return meta;
}

Status RdmaTensorMetaData::validate(uint64_t max_bytes) const {
  if (!is_valid_data_type(static_cast<uint8_t>(data_type))) {
    return {StatusCode::kMalformedMessage, "invalid data type"};
  }
  auto n = tensor_shape.num_elements();
  if (!n) return {StatusCode::kMalformedMessage, "invalid shape " + tensor_shape.to_string()};
  if (!is_dead && data_type != DataType::kString) {
    uint64_t element = data_type_size(data_type);
    if (*n > max_bytes / element) {
      return {StatusCode::kMalformedMessage, "tensor of shape " + tensor_shape.to_string() +
                                                 " exceeds " + std::to_string(max_bytes) +
                                                 " bytes"};
    }
  }
  if (!is_dead && data_type != DataType::kString && proto_size != 0) {
    return {StatusCode::kMalformedMessage, "proto size on a non-string tensor"};
  }
  if (proto_size > max_bytes) {
    return {StatusCode::kMalformedMessage, "proto size " + std::to_string(proto_size) +
                                               " exceeds " + std::to_string(max_bytes)};
  }
  if (!is_dead && data_type == DataType::kString) {
    // A serialization holds a count and one length per element, so the
    // element count is bounded by proto_size: a peer cannot make the receiver
    // build billions of strings from a small message.
    const uint64_t framing = 8;
    if (proto_size < framing || *n > (proto_size - framing) / 8) {
      return {StatusCode::kMalformedMessage,
              "string tensor of " + std::to_string(*n) + " elements cannot fit in proto size " +
                  std::to_string(proto_size)};
    }
  }
  return Status::ok();
}

std::string RdmaTensorMetaData::to_string() const {
  std::string s = std::string(data_type_name(data_type)) + tensor_shape.to_string();
  if (is_dead) s += " dead";
  if (data_type == DataType::kString) s += " proto=" + std::to_string(proto_size);
  return s;
}

void RdmaTensorMetaData::digest(StateDigest& d) const {
  d.add(static_cast<uint64_t>(data_type)).add(is_dead ? 1 : 0).add(proto_size);
  d.add(tensor_shape.dims.size());
  for (int64_t dim : tensor_shape.dims) d.add(static_cast<uint64_t>(dim));
}

}  // namespace tensorwire::tf_verbs
