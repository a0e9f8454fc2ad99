// The coordinator's wire format: round trips, and every malformation refused
// with a message that says what was wrong.
#include "launch/coordinator_frame.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tensorwire::launch {
namespace {

std::array<std::byte, kFrameHeaderBytes> header_bytes(FrameType type, uint32_t rank,
                                                      uint32_t body) {
  return encode_frame_header({type, rank, body});
}

TEST(CoordinatorFrame, HeaderRoundTrips) {
  auto bytes = header_bytes(FrameType::kGather, 3, 17);
  Result<FrameHeader> h = decode_frame_header(bytes, 100);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(h->type, FrameType::kGather);
  EXPECT_EQ(h->rank, 3u);
  EXPECT_EQ(h->body_bytes, 17u);
}

TEST(CoordinatorFrame, HeaderWithBadMagicIsRefused) {
  auto bytes = header_bytes(FrameType::kHello, 1, 4);
  bytes[0] = std::byte{'X'};
  Result<FrameHeader> h = decode_frame_header(bytes, 4);
  EXPECT_EQ(h.status().code(), StatusCode::kMalformedMessage);
  EXPECT_NE(h.status().message().find("bad magic"), std::string::npos);
}

TEST(CoordinatorFrame, HeaderWithUnknownTypeOrReservedBitsIsRefused) {
  auto bytes = header_bytes(FrameType::kHello, 1, 4);
  bytes[4] = std::byte{9};
  EXPECT_NE(decode_frame_header(bytes, 4).status().message().find("unknown type 9"),
            std::string::npos);
  bytes = header_bytes(FrameType::kHello, 1, 4);
  bytes[4] = std::byte{0};
  EXPECT_FALSE(decode_frame_header(bytes, 4).is_ok());
  bytes = header_bytes(FrameType::kHello, 1, 4);
  bytes[6] = std::byte{1};
  EXPECT_NE(decode_frame_header(bytes, 4).status().message().find("reserved"), std::string::npos);
}

TEST(CoordinatorFrame, HeaderAnnouncingMoreThanAllowedIsRefused) {
  auto bytes = header_bytes(FrameType::kGather, 1, 0xFFFFFFFFu);
  Result<FrameHeader> h = decode_frame_header(bytes, max_body_bytes(FrameType::kGather, 4));
  EXPECT_EQ(h.status().code(), StatusCode::kMalformedMessage);
  EXPECT_NE(h.status().message().find("4294967295 bytes"), std::string::npos);
}

TEST(CoordinatorFrame, HelloBodyMustBeFourBytes) {
  EXPECT_EQ(*decode_hello_body(encode_hello_body(42)), 42u);
  std::vector<std::byte> three(3);
  EXPECT_EQ(decode_hello_body(three).status().code(), StatusCode::kMalformedMessage);
}

TEST(CoordinatorFrame, GatherBodyRoundTripsAndBoundsItsEntry) {
  Result<GatherContribution> c = decode_gather_body(encode_gather_body(5, "10.77.0.1:4791"));
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->sequence, 5u);
  EXPECT_EQ(c->bytes, "10.77.0.1:4791");
  EXPECT_FALSE(decode_gather_body(std::vector<std::byte>(3)).is_ok());
  EXPECT_FALSE(decode_gather_body(encode_gather_body(1, std::string(kMaxGatherEntryBytes + 1, 'a')))
                   .is_ok());
}

TEST(CoordinatorFrame, GatherResultRoundTrips) {
  const std::vector<std::string> entries = {"a", "", std::string(300, 'z')};
  Result<std::vector<std::string>> back =
      decode_gather_result_body(encode_gather_result_body(9, entries), 9, 3);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, entries);
}

TEST(CoordinatorFrame, GatherResultThatLiesIsRefused) {
  const std::vector<std::byte> good = encode_gather_result_body(2, {"ab", "cd"});
  EXPECT_NE(decode_gather_result_body(good, 3, 2).status().message().find("exchange 2"),
            std::string::npos);
  EXPECT_NE(decode_gather_result_body(good, 2, 3).status().message().find("holding 2 entries"),
            std::string::npos);
  std::vector<std::byte> extra = good;
  extra.push_back(std::byte{0});
  EXPECT_NE(decode_gather_result_body(extra, 2, 2).status().message().find("after its last entry"),
            std::string::npos);
  for (size_t cut = 0; cut < good.size(); ++cut) {
    std::vector<std::byte> truncated(good.begin(), good.begin() + static_cast<long>(cut));
    EXPECT_EQ(decode_gather_result_body(truncated, 2, 2).status().code(),
              StatusCode::kMalformedMessage)
        << "cut at " << cut;
  }
  // An entry announcing more than an entry may hold, whatever follows.
  std::vector<std::byte> huge = encode_gather_result_body(2, {"ab"});
  huge[8] = std::byte{0x7F};
  EXPECT_NE(decode_gather_result_body(huge, 2, 1).status().message().find("is more than"),
            std::string::npos);
}

}  // namespace
}  // namespace tensorwire::launch
