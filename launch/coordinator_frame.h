// The wire format of the bootstrap coordinator (tcp_coordinator.h): what ranks
// and the coordinator send each other over TCP before any RDMA is set up.
//
// Every message is a 16-byte header and a body:
//
//   bytes 0..3    magic "TWC1" (tensorwire coordinator, format 1)
//   byte  4       type (FrameType)
//   bytes 5..7    zero
//   bytes 8..11   sender's rank, big-endian
//   bytes 12..15  body length in bytes, big-endian
//
// Bodies, all integers big-endian:
//   kHello         world_size u32                              (rank -> coordinator)
//   kGather        sequence u32, then the rank's bytes         (rank -> coordinator)
//   kGatherResult  sequence u32, count u32, count x (length u32, bytes)
//                                                              (coordinator -> rank)
//   kAbort         why the sender gave up, text of at most kMaxAbortReasonBytes
//                                                              (either way, then it closes)
//
// An abort may come wherever any other message could: a rank that gives up
// sends one to every connection before closing it, so the others can tell a
// rank that failed (and why) from one whose process ended without a word.
//
// The bytes come from another process, maybe not ours, so decoding checks
// every field and every length against what the reader expects and answers a
// kMalformedMessage Status that says which field was wrong. Its message is a
// noun phrase ("a hello body of 3 bytes, want 4"), so the reader, who knows
// the peer, can report "<peer> sent <message>".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace tensorwire::launch {

enum class FrameType : uint8_t {
  kHello = 1,
  kGather = 2,
  kGatherResult = 3,
  kAbort = 4,
};

const char* frame_type_name(FrameType type);

constexpr size_t kFrameHeaderBytes = 16;
// What one rank may contribute to an all-gather (an "A.B.C.D:PORT" needs 21).
constexpr uint32_t kMaxGatherEntryBytes = 1024;
// Ranks the coordinator serves; bounds every body a reader accepts.
constexpr uint32_t kMaxCoordinatorWorld = 4096;
// The reason an abort carries (longer reasons are cut to this).
constexpr uint32_t kMaxAbortReasonBytes = 1024;

struct FrameHeader {
  FrameType type = FrameType::kHello;
  uint32_t rank = 0;
  uint32_t body_bytes = 0;
};

std::array<std::byte, kFrameHeaderBytes> encode_frame_header(const FrameHeader& header);

// Checks magic, type, the zero bytes, and that the body is at most
// max_body_bytes (an abort's at most kMaxAbortReasonBytes, whatever the reader
// expected: it may come in place of any message).
Result<FrameHeader> decode_frame_header(std::span<const std::byte, kFrameHeaderBytes> bytes,
                                        uint32_t max_body_bytes);

std::vector<std::byte> encode_hello_body(uint32_t world_size);
Result<uint32_t> decode_hello_body(std::span<const std::byte> body);

struct GatherContribution {
  uint32_t sequence = 0;
  std::string bytes;
};
std::vector<std::byte> encode_gather_body(uint32_t sequence, std::string_view bytes);
Result<GatherContribution> decode_gather_body(std::span<const std::byte> body);

std::vector<std::byte> encode_gather_result_body(uint32_t sequence,
                                                 const std::vector<std::string>& entries);
// Wants exactly `expected_count` entries for `expected_sequence`, each at most
// kMaxGatherEntryBytes, and no byte left over.
Result<std::vector<std::string>> decode_gather_result_body(std::span<const std::byte> body,
                                                           uint32_t expected_sequence,
                                                           uint32_t expected_count);

// The reason, cut to kMaxAbortReasonBytes.
std::vector<std::byte> encode_abort_body(std::string_view why);
Result<std::string> decode_abort_body(std::span<const std::byte> body);

// The largest body a reader should accept for a frame of this type in a world
// of `world_size` ranks.
uint32_t max_body_bytes(FrameType type, uint32_t world_size);

}  // namespace tensorwire::launch
