// RdmaTensorMetaData: what a receiver must know to pre-allocate the result of a
// tensor request (type, shape, is_dead, proto size for strings). Cached per
// (source rank, tensor name) by RdmaMemoryMgr; compared by the sender against
// the tensor it holds to decide between a direct write and a META_DATA_UPDATE.
#pragma once

#include <cstdint>
#include <string>

#include "core/state_digest.h"
#include "core/status.h"
#include "core/tensor.h"

namespace tensorwire::tf_verbs {

// The design moves a tensor's content in one RDMA write, and a verbs message
// (and a completion's byte_len) is at most 2^31 bytes: the largest tensor, or
// string serialization, this protocol carries.
inline constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 31;

struct RdmaTensorMetaData {
  DataType data_type = DataType::kFloat32;
  TensorShape tensor_shape;
  bool is_dead = false;
  uint64_t proto_size = 0;  // kString only: bytes of the serialized strings

  // Bytes the content write carries: 0 when dead, proto_size for strings,
  // elements * element size otherwise (0 if the shape is invalid).
  uint64_t byte_size() const;
  // The meta-data of a tensor about to be sent (proto_size computed for strings).
  static RdmaTensorMetaData of(const Tensor& tensor);
  // ok when the meta-data describes something a receiver may allocate:
  // a non-negative shape without overflow, a byte size within max_bytes.
  Status validate(uint64_t max_bytes) const;
  std::string to_string() const;
  void digest(StateDigest& d) const;  // for model checkers' state caches

  friend bool operator==(const RdmaTensorMetaData&, const RdmaTensorMetaData&) = default;
};

}  // namespace tensorwire::tf_verbs
