// Writes the binary seed inputs of the fuzz targets with the project's own
// encoders, so each seed is a message a real peer sends, plus near-valid
// variants (truncated, one field flipped) that start the fuzzer at the
// decoders' checks. Text seeds (scenarios, schedules, results JSON,
// endpoints) are files kept by hand in corpus/.
//   write_fuzz_seeds CORPUS_DIR      (tests/fuzz/corpus)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/protocols/mvapich2_gpu/mv2_message.h"
#include "core/protocols/oneflow_commnet/commnet_message.h"
#include "core/protocols/realm_broadcast/collective_message.h"
#include "core/protocols/tf_verbs_legacy/legacy_message.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_message.h"
#include "core/protocols/tf_verbs_zero_copy/tensor_proto.h"
#include "launch/coordinator_frame.h"

using namespace tensorwire;
using Bytes = std::vector<std::byte>;

namespace {

std::filesystem::path g_root;

void write(const std::string& target, const std::string& name, std::span<const std::byte> bytes) {
  const std::filesystem::path dir = g_root / target;
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A valid message, then the same truncated by one byte and with its last
// byte flipped: each fails one check of the decoder.
void write_with_variants(const std::string& target, const std::string& name, const Bytes& bytes) {
  write(target, name, bytes);
  if (bytes.empty()) return;
  write(target, "near-" + name + "-truncated", std::span(bytes).first(bytes.size() - 1));
  Bytes flipped = bytes;
  flipped.back() ^= std::byte{0xff};
  write(target, "near-" + name + "-flipped", flipped);
}

// The variants above, plus one byte too many after the message: a decoder
// must refuse trailing bytes (the newer protocols' messages all say how long
// they are).
void write_with_trailing(const std::string& target, const std::string& name, const Bytes& bytes) {
  write_with_variants(target, name, bytes);
  Bytes longer = bytes;
  longer.push_back(std::byte{0});
  write(target, "near-" + name + "-trailing", longer);
}

// An encoder's answer, or the seed writer stops: every seed must be a
// message the project itself sends.
template <typename T>
T must(Result<T> r, const char* what) {
  if (!r.is_ok()) {
    std::fprintf(stderr, "write_fuzz_seeds: cannot encode %s: %s\n", what,
                 r.status().message().c_str());
    std::exit(1);
  }
  return std::move(*r);
}

Bytes encoded(const wire::RdmaMessage& m) {
  Bytes out(wire::encoded_size(m));
  if (!wire::encode(m, out).is_ok()) {
    std::fprintf(stderr, "write_fuzz_seeds: cannot encode %s\n", wire::to_string(m).c_str());
    std::exit(1);
  }
  return out;
}

void rdma_messages() {
  wire::RdmaMessage request{.type = wire::RdmaMessageType::kTensorRequest, .name = "weights",
                            .step_id = 3, .request_index = 7};
  write_with_variants("rdma_message", "tensor-request-first", encoded(request));
  wire::RdmaMessage cached = request;
  cached.remote_addr = 0x7f0000001000;
  cached.rkey = 0x1234;
  cached.tensor_shape.dims = {256, 1024};
  cached.tensor_bytes = 256 * 1024 * 4;
  write_with_variants("rdma_message", "tensor-request-cached", encoded(cached));
  wire::RdmaMessage update = cached;
  update.type = wire::RdmaMessageType::kMetaDataUpdate;
  update.data_type = DataType::kString;
  update.tensor_shape.dims = {3};
  update.tensor_bytes = 40;
  write_with_variants("rdma_message", "meta-data-update-string", encoded(update));
  wire::RdmaMessage dead = cached;
  dead.type = wire::RdmaMessageType::kTensorReRequest;
  dead.is_dead = true;
  dead.tensor_bytes = 0;
  write_with_variants("rdma_message", "tensor-re-request-dead", encoded(dead));
  wire::RdmaMessage error{.type = wire::RdmaMessageType::kErrorStatus, .name = "grad/conv1",
                          .step_id = 9, .request_index = 2,
                          .error_code = StatusCode::kOutOfMemory,
                          .error_message = "registration failed"};
  write_with_variants("rdma_message", "error-status", encoded(error));
}

void tensor_protos() {
  const std::vector<std::string> strings = {"", "a", "tensorwire", std::string(40, 'x')};
  Bytes payload(wire::serialized_strings_size(strings));
  (void)wire::serialize_strings(strings, payload);
  // The target's input: the expected element count (8 bytes, host order), then the payload.
  Bytes input(8);
  const uint64_t count = strings.size();
  std::memcpy(input.data(), &count, sizeof count);
  input.insert(input.end(), payload.begin(), payload.end());
  write_with_variants("tensor_proto", "four-strings", input);
  Bytes empty(8 + 8);  // zero elements expected, count 0
  write("tensor_proto", "no-strings", empty);
}

void collective_messages() {
  collectives::CollectiveMessage ready{.type = collectives::CollectiveMessageType::kIbReady,
                                       .copy = 5, .addr = 0x10000, .ring_bytes = 1 << 20,
                                       .rkey = 77};
  const auto r = ready.encode();
  write_with_variants("collective_message", "ib-ready", Bytes(r.begin(), r.end()));
  collectives::CollectiveMessage read{.type = collectives::CollectiveMessageType::kBytesRead,
                                      .copy = 5, .bytes_read = 4096};
  const auto b = read.encode();
  write_with_variants("collective_message", "bytes-read", Bytes(b.begin(), b.end()));
  collectives::CollectiveMessage abort{.type = collectives::CollectiveMessageType::kAbort,
                                       .failed_rank = 1, .reason = StatusCode::kQpError};
  const auto a = abort.encode();
  write_with_variants("collective_message", "abort", Bytes(a.begin(), a.end()));
  collectives::CollectiveMessage window{.type = collectives::CollectiveMessageType::kWindowReady,
                                        .copy = 5, .rkey = 78, .window_offset = 1 << 20,
                                        .window_bytes = 1 << 20};
  const auto w = window.encode();
  write_with_variants("collective_message", "window-ready", Bytes(w.begin(), w.end()));
}

// A CommNet message as it lands in a receive slot: the header, then (an
// eager tensor) its content.
Bytes commnet_wire(const oneflow::Message& m) {
  Bytes out = must(oneflow::encode_header(m), oneflow::message_type_name(m.type));
  if (m.type == oneflow::MessageType::kEagerTensor) {
    for (uint64_t i = 0; i < m.tensor_bytes; ++i) out.push_back(static_cast<std::byte>(i * 7));
  }
  return out;
}

void commnet_messages() {
  using oneflow::MessageType;
  oneflow::Message request{.type = MessageType::kRequest, .credits = 2, .name = "layer1/weights",
                           .step_id = 7};
  write_with_trailing("commnet_message", "request", commnet_wire(request));
  oneflow::Message eager = request;
  eager.type = MessageType::kEagerTensor;
  eager.dtype = DataType::kInt64;
  eager.shape.dims = {2, 3};
  eager.tensor_bytes = 2 * 3 * 8;
  write_with_trailing("commnet_message", "eager-tensor", commnet_wire(eager));
  oneflow::Message dead = eager;
  dead.is_dead = true;
  dead.tensor_bytes = 0;
  write_with_trailing("commnet_message", "eager-tensor-dead", commnet_wire(dead));
  oneflow::Message descriptor = eager;
  descriptor.type = MessageType::kDescriptor;
  descriptor.dtype = DataType::kFloat32;
  descriptor.shape.dims = {16, 64};
  descriptor.tensor_bytes = 16 * 64 * 4;
  descriptor.token = 42;
  descriptor.remote_addr = 0x7f0000010000;
  descriptor.rkey = 0xabcd;
  write_with_trailing("commnet_message", "descriptor", commnet_wire(descriptor));
  oneflow::Message done{.type = MessageType::kReadDone, .credits = 1, .token = 42};
  write_with_trailing("commnet_message", "read-done", commnet_wire(done));
  oneflow::Message error{.type = MessageType::kError, .name = "layer1/weights", .step_id = 7,
                         .error_code = StatusCode::kAborted, .error_message = "step aborted"};
  write_with_trailing("commnet_message", "error", commnet_wire(error));
  oneflow::Message credit{.type = MessageType::kCredit, .credits = 16};
  write_with_trailing("commnet_message", "credit", commnet_wire(credit));
}

// An MVAPICH2-GPU message as it lands in a receive slot: the header, then
// (EAGER) its content.
Bytes mv2_wire(const mvapich2::Message& m) {
  Bytes out = must(mvapich2::encode_header(m), mvapich2::message_type_name(m.type));
  if (m.type == mvapich2::MessageType::kEager) {
    for (uint64_t i = 0; i < m.tensor_bytes; ++i) out.push_back(static_cast<std::byte>(i * 5));
  }
  return out;
}

// REQUEST, EAGER (live and dead) and RTS: the messages that name a tensor.
void mv2_tensor_messages() {
  using mvapich2::MessageType;
  mvapich2::Message request{.type = MessageType::kRequest, .credits = 1, .name = "conv1/kernel",
                            .step_id = 3};
  write_with_trailing("mv2_message", "request", mv2_wire(request));
  mvapich2::Message eager = request;
  eager.type = MessageType::kEager;
  eager.dtype = DataType::kFloat32;
  eager.shape.dims = {4};
  eager.tensor_bytes = 16;
  write_with_trailing("mv2_message", "eager", mv2_wire(eager));
  mvapich2::Message dead = eager;
  dead.is_dead = true;
  dead.tensor_bytes = 0;
  write_with_trailing("mv2_message", "eager-dead", mv2_wire(dead));
  mvapich2::Message rts = eager;
  rts.type = MessageType::kRts;
  rts.transfer = 5;
  rts.flag = true;
  rts.shape.dims = {1000, 3};
  rts.tensor_bytes = 12000;
  write_with_trailing("mv2_message", "rts-staged", mv2_wire(rts));
}

// CTS (to vbufs and to the user's buffer), FIN, ERROR (ending a transfer and
// not) and CREDIT.
void mv2_transfer_messages() {
  using mvapich2::MessageType;
  mvapich2::Message cts{.type = MessageType::kCts, .transfer = 5, .block = 2,
                        .block_bytes = 4096, .rkey = 77, .addrs = {0x1000, 0x2000, 0x3000}};
  write_with_trailing("mv2_message", "cts-vbufs", mv2_wire(cts));
  mvapich2::Message direct = cts;
  direct.flag = true;
  direct.block = 0;
  direct.addrs = {0x7f0000100000};
  write_with_trailing("mv2_message", "cts-user-buffer", mv2_wire(direct));
  mvapich2::Message fin{.type = MessageType::kFin, .credits = 9, .transfer = 5, .block = 4};
  write_with_trailing("mv2_message", "fin", mv2_wire(fin));
  mvapich2::Message error{.type = MessageType::kError, .name = "conv1/kernel", .step_id = 3,
                          .transfer = 5, .flag = true, .error_code = StatusCode::kAborted,
                          .error_message = "step aborted"};
  write_with_trailing("mv2_message", "error-ends-transfer", mv2_wire(error));
  mvapich2::Message refused = error;
  refused.transfer = 0;
  refused.flag = false;
  refused.error_code = StatusCode::kOutOfMemory;
  refused.error_message = "";
  write_with_trailing("mv2_message", "error-no-transfer", mv2_wire(refused));
  mvapich2::Message credit{.type = MessageType::kCredit, .credits = 16};
  write_with_trailing("mv2_message", "credit", mv2_wire(credit));
}

// The six seed types and the harness's ERROR.
void legacy_messages() {
  using tf_legacy::RdmaMessage;
  using tf_legacy::RdmaMessageType;
  write_with_trailing("legacy_message", "ack", must(tf_legacy::encode(RdmaMessage{}), "ACK"));
  RdmaMessage idle{.type = RdmaMessageType::kBufferIdle, .name = "conv1/kernel"};
  write_with_trailing("legacy_message", "buffer-idle", must(tf_legacy::encode(idle), "IDLE"));
  RdmaMessage request{.type = RdmaMessageType::kTensorRequest, .name = "conv1/kernel",
                      .step_id = 7};
  write_with_trailing("legacy_message", "tensor-request",
                      must(tf_legacy::encode(request), "TENSOR_REQUEST"));
  RdmaMessage buffer{.type = RdmaMessageType::kBufferRequest, .name = "conv1/kernel",
                     .step_id = 7, .buffer_size = 64, .remote_addr = 0x1000, .rkey = 9,
                     .tensor_shape = {{3, 4}}, .tensor_bytes = 48};
  write_with_trailing("legacy_message", "buffer-request",
                      must(tf_legacy::encode(buffer), "BUFFER_REQUEST"));
  buffer.type = RdmaMessageType::kBufferResponse;
  write_with_trailing("legacy_message", "buffer-response",
                      must(tf_legacy::encode(buffer), "BUFFER_RESPONSE"));
  RdmaMessage write_header{.type = RdmaMessageType::kTensorWrite, .name = "conv1/kernel",
                           .step_id = 7, .buffer_size = 48, .data_type = DataType::kInt32,
                           .tensor_shape = {{3, 4}}, .tensor_bytes = 48};
  write_with_trailing("legacy_message", "tensor-write",
                      must(tf_legacy::encode(write_header), "TENSOR_WRITE"));
  RdmaMessage dead = write_header;
  dead.is_dead = true;
  dead.buffer_size = 0;
  dead.tensor_bytes = 0;
  write_with_trailing("legacy_message", "tensor-write-dead",
                      must(tf_legacy::encode(dead), "TENSOR_WRITE"));
  RdmaMessage error{.type = RdmaMessageType::kError, .name = "fc/bias", .step_id = 3,
                    .error_code = StatusCode::kAborted, .error_text = "step aborted"};
  write_with_trailing("legacy_message", "error", must(tf_legacy::encode(error), "ERROR"));
}

// The target's input: world size (u16, big-endian), expected sequence (u32,
// host order), the header, the body.
Bytes frame(uint16_t world, uint32_t sequence, launch::FrameType type, const Bytes& body) {
  Bytes out = {std::byte(world >> 8), std::byte(world & 0xff)};
  out.resize(6);
  std::memcpy(out.data() + 2, &sequence, sizeof sequence);
  const auto head = launch::encode_frame_header(
      {.type = type, .rank = 1, .body_bytes = static_cast<uint32_t>(body.size())});
  out.insert(out.end(), head.begin(), head.end());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

void coordinator_frames() {
  using launch::FrameType;
  write_with_variants("coordinator_frame", "hello",
                      frame(4, 0, FrameType::kHello, launch::encode_hello_body(4)));
  write_with_variants("coordinator_frame", "gather",
                      frame(4, 2, FrameType::kGather, launch::encode_gather_body(2, "10.0.0.2:7001")));
  const std::vector<std::string> entries = {"10.0.0.1:7000", "10.0.0.2:7001", "", "x"};
  write_with_variants("coordinator_frame", "gather-result",
                      frame(4, 2, FrameType::kGatherResult,
                            launch::encode_gather_result_body(2, entries)));
  write_with_variants("coordinator_frame", "abort",
                      frame(4, 0, FrameType::kAbort,
                            launch::encode_abort_body("step 2: rank 1 lost: its process ended")));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_fuzz_seeds CORPUS_DIR\n");
    return 2;
  }
  g_root = argv[1];
  rdma_messages();
  tensor_protos();
  collective_messages();
  coordinator_frames();
  commnet_messages();
  mv2_tensor_messages();
  mv2_transfer_messages();
  legacy_messages();
  return 0;
}
