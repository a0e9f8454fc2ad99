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
#include <vector>

#include "core/protocols/realm_broadcast/collective_message.h"
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
  return 0;
}
