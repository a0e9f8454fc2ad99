// Properties of the control message encoding over random messages and random
// or mutated bytes. decode() must never read outside its input (the random
// inputs live in exactly-sized heap allocations, so the address sanitizer
// build catches any overread) and must answer ok or kMalformedMessage, never
// anything else. The encoding is canonical: bytes that decode re-encode to
// exactly themselves.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/protocols/tf_verbs_zero_copy/rdma_message.h"

namespace tensorwire::wire {
namespace {

constexpr std::array<RdmaMessageType, 4> kTypes = {
    RdmaMessageType::kTensorRequest, RdmaMessageType::kMetaDataUpdate,
    RdmaMessageType::kTensorReRequest, RdmaMessageType::kErrorStatus};
constexpr std::array<DataType, 9> kDataTypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
    DataType::kFloat64, DataType::kInt32,   DataType::kInt64,
    DataType::kUInt8,   DataType::kBool,    DataType::kString};
constexpr std::array<StatusCode, 13> kCodes = {StatusCode::kOk,
                                               StatusCode::kNoResource,
                                               StatusCode::kInvalidArgument,
                                               StatusCode::kMalformedMessage,
                                               StatusCode::kNotFound,
                                               StatusCode::kOutOfMemory,
                                               StatusCode::kQpError,
                                               StatusCode::kRemoteAccess,
                                               StatusCode::kAborted,
                                               StatusCode::kPeerGone,
                                               StatusCode::kUnavailable,
                                               StatusCode::kInternal,
                                               StatusCode::kResourceLimit};

// An exactly-sized heap copy: reading one byte past it is an ASan error.
class ExactBytes {
 public:
  explicit ExactBytes(const std::vector<uint8_t>& bytes)
      : size_(bytes.size()), data_(std::make_unique<std::byte[]>(size_ == 0 ? 1 : size_)) {
    if (size_) std::memcpy(data_.get(), bytes.data(), size_);
  }
  std::span<const std::byte> span() const { return {data_.get(), size_}; }

 private:
  size_t size_;
  std::unique_ptr<std::byte[]> data_;
};

std::string random_bytes_string(size_t max_len, bool at_least_one) {
  // Mostly short, sometimes up to the limit.
  size_t len = *rc::gen::inRange(0, 8) == 0 ? *rc::gen::inRange<size_t>(0, max_len + 1)
                                            : *rc::gen::inRange<size_t>(0, 33);
  if (at_least_one && len == 0) len = 1;
  return *rc::gen::container<std::string>(len, rc::gen::arbitrary<char>());
}

// Mirrors the rule in rdma_message.cc: which messages' meta-data must match
// their tensor_bytes.
bool describes_tensor(const RdmaMessage& m) {
  return m.type == RdmaMessageType::kMetaDataUpdate ||
         (m.type != RdmaMessageType::kErrorStatus && m.remote_addr != 0);
}

// A random message within every limit and rule.
RdmaMessage gen_valid_message() {
  RdmaMessage m;
  m.type = *rc::gen::elementOf(kTypes);
  m.name = random_bytes_string(kMaxNameBytes, /*at_least_one=*/true);
  m.step_id = *rc::gen::arbitrary<uint64_t>();
  m.request_index = *rc::gen::arbitrary<uint32_t>();
  m.remote_addr = *rc::gen::inRange(0, 4) == 0 ? 0 : *rc::gen::arbitrary<uint64_t>();
  m.rkey = *rc::gen::arbitrary<uint32_t>();
  m.is_dead = *rc::gen::arbitrary<bool>();
  m.data_type = *rc::gen::elementOf(kDataTypes);
  size_t rank = *rc::gen::inRange(0, 6) == 0 ? *rc::gen::inRange<size_t>(0, kMaxDims + 1)
                                             : *rc::gen::inRange<size_t>(0, 5);
  // Keep elements * 8 within 64 bits so any data type's byte count fits.
  uint64_t elements = 1;
  const uint64_t limit = std::numeric_limits<uint64_t>::max() / 8;
  for (size_t i = 0; i < rank; ++i) {
    int64_t dim = *rc::gen::inRange(0, 4) == 0
                      ? *rc::gen::inRange<int64_t>(0, std::numeric_limits<int64_t>::max())
                      : *rc::gen::inRange<int64_t>(0, 10);
    auto ud = static_cast<uint64_t>(dim);
    if (ud != 0 && elements > limit / ud) {
      dim = 1;
      ud = 1;
    }
    elements *= ud;
    m.tensor_shape.dims.push_back(dim);
  }
  if (!describes_tensor(m) || (!m.is_dead && m.data_type == DataType::kString)) {
    m.tensor_bytes = *rc::gen::arbitrary<uint64_t>();
  } else if (m.is_dead) {
    m.tensor_bytes = 0;
  } else {
    m.tensor_bytes = elements * data_type_size(m.data_type);
  }
  m.error_code = *rc::gen::elementOf(kCodes);
  m.error_message = random_bytes_string(kMaxErrorMessageBytes, /*at_least_one=*/false);
  return m;
}

std::vector<uint8_t> encode_to_vector(const RdmaMessage& m) {
  std::vector<std::byte> out(encoded_size(m));
  Result<size_t> n = encode(m, out);
  RC_ASSERT(n.is_ok());
  std::vector<uint8_t> bytes(out.size());
  for (size_t i = 0; i < out.size(); ++i) bytes[i] = static_cast<uint8_t>(out[i]);
  return bytes;
}

// decode() on `bytes`: ok or kMalformedMessage; when ok, canonical.
void check_decodes_or_fails_cleanly(const std::vector<uint8_t>& bytes) {
  ExactBytes exact(bytes);
  Result<RdmaMessage> r = decode(exact.span());
  if (!r.is_ok()) {
    RC_ASSERT(r.status().code() == StatusCode::kMalformedMessage);
    RC_ASSERT(r.status().message().find(" at offset ") != std::string::npos);
    return;
  }
  RC_ASSERT(bytes.size() <= max_encoded_size());
  RC_ASSERT(validate(*r).is_ok());
  RC_ASSERT(encode_to_vector(*r) == bytes);
}

RC_GTEST_PROP(RdmaMessageProperty, DecodeOfEncodeIsIdentity, ()) {
  RdmaMessage m = gen_valid_message();
  RC_ASSERT(validate(m).is_ok());
  std::vector<std::byte> out(encoded_size(m));
  Result<size_t> n = encode(m, out);
  RC_ASSERT(n.is_ok());
  RC_ASSERT(*n == out.size());
  RC_ASSERT(*n <= max_encoded_size());
  Result<RdmaMessage> back = decode(out);
  RC_ASSERT(back.is_ok());
  RC_ASSERT(*back == m);
}

// Fields drawn without regard to the rules (out-of-range enums, over-long
// strings, negative dims, inconsistent sizes): encode() either refuses with
// kInvalidArgument or writes bytes that decode back to the same message.
RC_GTEST_PROP(RdmaMessageProperty, EncodeRefusesOrWritesWhatDecodeReturns, ()) {
  RdmaMessage m = gen_valid_message();
  switch (*rc::gen::inRange(0, 9)) {
    case 0: m.type = static_cast<RdmaMessageType>(*rc::gen::arbitrary<uint8_t>()); break;
    case 1: m.data_type = static_cast<DataType>(*rc::gen::arbitrary<uint8_t>()); break;
    case 2: m.error_code = static_cast<StatusCode>(*rc::gen::inRange(-2, 300)); break;
    case 3: m.name = std::string(*rc::gen::inRange<size_t>(0, 2 * kMaxNameBytes), 'x'); break;
    case 4: m.error_message.assign(*rc::gen::inRange<size_t>(0, 600), 'e'); break;
    case 5: m.tensor_shape.dims.assign(*rc::gen::inRange<size_t>(0, 2 * kMaxDims), 1); break;
    case 6: m.tensor_shape.dims.push_back(*rc::gen::arbitrary<int64_t>()); break;
    case 7: m.tensor_bytes = *rc::gen::arbitrary<uint64_t>(); break;
    default: break;
  }
  std::vector<std::byte> out(encoded_size(m));
  Result<size_t> n = encode(m, out);
  RC_ASSERT(validate(m).is_ok() == n.is_ok());
  if (!n.is_ok()) {
    RC_ASSERT(n.status().code() == StatusCode::kInvalidArgument);
    return;
  }
  Result<RdmaMessage> back = decode(out);
  RC_ASSERT(back.is_ok());
  RC_ASSERT(*back == m);
}

RC_GTEST_PROP(RdmaMessageProperty, DecodeNeverReadsPastInputOnRandomBytes, ()) {
  size_t len = *rc::gen::inRange<size_t>(0, max_encoded_size() + 16);
  auto bytes = *rc::gen::container<std::vector<uint8_t>>(len, rc::gen::arbitrary<uint8_t>());
  // Usually give it a valid header so the random part reaches the later fields.
  if (!bytes.empty() && *rc::gen::inRange(0, 4) != 0) bytes[0] = kFormatByte;
  if (bytes.size() > 1 && *rc::gen::inRange(0, 4) != 0) {
    bytes[1] = static_cast<uint8_t>(*rc::gen::elementOf(kTypes));
  }
  if (bytes.size() > 3 && *rc::gen::inRange(0, 2) != 0) {
    bytes[2] = *rc::gen::inRange<uint8_t>(1, 40);  // a short name, so more fields are parsed
    bytes[3] = 0;
  }
  check_decodes_or_fails_cleanly(bytes);
}

RC_GTEST_PROP(RdmaMessageProperty, MutatedMessageDecodesOrFailsCleanly, ()) {
  const std::vector<uint8_t> original = encode_to_vector(gen_valid_message());
  for (int round = 0; round < 20; ++round) {
    std::vector<uint8_t> bytes = original;
    int flips = *rc::gen::inRange(1, 5);
    for (int i = 0; i < flips; ++i) {
      size_t at = *rc::gen::inRange<size_t>(0, bytes.size());
      bytes[at] ^= *rc::gen::inRange<uint8_t>(1, 255);
    }
    switch (*rc::gen::inRange(0, 4)) {
      case 0: bytes.resize(*rc::gen::inRange<size_t>(0, bytes.size() + 1)); break;
      case 1: bytes.push_back(*rc::gen::arbitrary<uint8_t>()); break;
      default: break;
    }
    check_decodes_or_fails_cleanly(bytes);
  }
}

}  // namespace
}  // namespace tensorwire::wire
