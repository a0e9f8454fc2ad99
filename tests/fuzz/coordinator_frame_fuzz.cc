// The bootstrap coordinator's frames (launch/coordinator_frame.h) as another
// process sends them over TCP: a 16-byte header, then the body it announces.
// The input starts with what the reader already knows: the world size (u16,
// capped as the coordinator caps it) and the all-gather sequence it waits for
// (u32); then the header and the body (hello, gather, gather result or abort), decoded the way tcp_coordinator.cc
// reads them. Whatever decodes must encode back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "launch/coordinator_frame.h"
#include "tests/fuzz/fuzz_check.h"

using namespace tensorwire;
using namespace tensorwire::launch;

namespace {

constexpr size_t kReaderBytes = 6;  // world u16, sequence u32

bool same(const std::vector<std::byte>& encoded, std::span<const std::byte> body) {
  return encoded.size() == body.size() &&
         (body.empty() || std::memcmp(encoded.data(), body.data(), body.size()) == 0);
}

void check_body(FrameType type, std::span<const std::byte> body, uint32_t world, uint32_t seq) {
  switch (type) {
    case FrameType::kHello:
      if (Result<uint32_t> w = decode_hello_body(body)) {
        FUZZ_CHECK(same(encode_hello_body(*w), body), "hello round trip");
      }
      return;
    case FrameType::kGather:
      if (Result<GatherContribution> c = decode_gather_body(body)) {
        FUZZ_CHECK(same(encode_gather_body(c->sequence, c->bytes), body), "gather round trip");
      }
      return;
    case FrameType::kGatherResult:
      if (Result<std::vector<std::string>> e = decode_gather_result_body(body, seq, world)) {
        FUZZ_CHECK(e->size() == world, "a gather result holds one entry per rank");
        FUZZ_CHECK(same(encode_gather_result_body(seq, *e), body), "gather result round trip");
      }
      return;
    case FrameType::kAbort:
      if (Result<std::string> why = decode_abort_body(body)) {
        FUZZ_CHECK(why->size() <= kMaxAbortReasonBytes, "an abort reason within its bound");
        // Control characters read as '?', so the reason read back is a fixed point.
        Result<std::string> again = decode_abort_body(encode_abort_body(*why));
        FUZZ_CHECK(again.is_ok() && *again == *why, "abort round trip");
      }
      return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kReaderBytes + kFrameHeaderBytes) return 0;
  const uint32_t world = (uint32_t{data[0]} << 8 | data[1]) % (kMaxCoordinatorWorld + 1);
  uint32_t sequence = 0;
  std::memcpy(&sequence, data + 2, sizeof sequence);
  const auto* frame = reinterpret_cast<const std::byte*>(data) + kReaderBytes;
  const std::span<const std::byte, kFrameHeaderBytes> head(frame, kFrameHeaderBytes);
  // The reader does not know the type before the header: bound the body by
  // the largest any type may have, then by the type's own bound.
  Result<FrameHeader> header = decode_frame_header(head, max_body_bytes(FrameType::kGatherResult, world));
  if (!header) return 0;
  const auto encoded = encode_frame_header(*header);
  FUZZ_CHECK(std::memcmp(encoded.data(), head.data(), kFrameHeaderBytes) == 0, "header round trip");
  const size_t rest = size - kReaderBytes - kFrameHeaderBytes;
  if (header->body_bytes > max_body_bytes(header->type, world) || rest < header->body_bytes) return 0;
  check_body(header->type, std::span<const std::byte>(frame + kFrameHeaderBytes, header->body_bytes),
             world, sequence);
  return 0;
}
