// The collective's control messages: round trips, and a peer's bad bytes are
// an error value, never a crash.
#include "core/protocols/realm_broadcast/collective_message.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace tensorwire::collectives {
namespace {

TEST(CollectiveMessage, IbReadyRoundTrips) {
  CollectiveMessage m;
  m.type = CollectiveMessageType::kIbReady;
  m.copy = 77;
  m.addr = 0x123456789abcull;
  m.ring_bytes = 16 << 20;
  m.rkey = 0xdeadbeef;
  auto bytes = m.encode();
  auto back = CollectiveMessage::decode(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->type, m.type);
  EXPECT_EQ(back->copy, 77u);
  EXPECT_EQ(back->addr, m.addr);
  EXPECT_EQ(back->ring_bytes, m.ring_bytes);
  EXPECT_EQ(back->rkey, m.rkey);
}

TEST(CollectiveMessage, BytesReadRoundTrips) {
  CollectiveMessage m;
  m.type = CollectiveMessageType::kBytesRead;
  m.copy = 3;
  m.bytes_read = (1ull << 40) + 5;
  auto back = CollectiveMessage::decode(m.encode());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->type, CollectiveMessageType::kBytesRead);
  EXPECT_EQ(back->bytes_read, m.bytes_read);
}

TEST(CollectiveMessage, AbortRoundTripsWithTheFailedRankAndItsReason) {
  CollectiveMessage m;
  m.type = CollectiveMessageType::kAbort;
  m.failed_rank = 3;
  m.reason = StatusCode::kQpError;
  auto back = CollectiveMessage::decode(m.encode());
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->type, CollectiveMessageType::kAbort);
  EXPECT_EQ(back->failed_rank, 3u);
  EXPECT_EQ(back->reason, StatusCode::kQpError);
  EXPECT_EQ(back->copy, 0u);
}

TEST(CollectiveMessage, WindowReadyRoundTripsAndAnEmptyWindowIsMalformed) {
  CollectiveMessage m;
  m.type = CollectiveMessageType::kWindowReady;
  m.copy = 9;
  m.window_offset = 5ull << 30;
  m.window_bytes = 1 << 20;
  m.rkey = 0x1234;
  auto back = CollectiveMessage::decode(m.encode());
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->type, CollectiveMessageType::kWindowReady);
  EXPECT_EQ(back->copy, 9u);
  EXPECT_EQ(back->window_offset, m.window_offset);
  EXPECT_EQ(back->window_bytes, m.window_bytes);
  EXPECT_EQ(back->rkey, m.rkey);
  m.window_bytes = 0;
  auto empty = CollectiveMessage::decode(m.encode());
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.status().code(), StatusCode::kMalformedMessage);
  EXPECT_NE(empty.status().message().find("empty window"), std::string::npos);
}

// An ABORT carries an error, and nothing in the fields it does not use.
TEST(CollectiveMessage, AMalformedAbortIsRejectedWithAReason) {
  CollectiveMessage m;
  m.type = CollectiveMessageType::kAbort;
  m.failed_rank = 1;
  m.reason = StatusCode::kPeerGone;
  const auto good = m.encode();
  ASSERT_TRUE(CollectiveMessage::decode(good));
  const auto rejected = [](std::array<std::byte, CollectiveMessage::kWireBytes> bytes, size_t at,
                           uint8_t value) {
    bytes[at] = std::byte{value};
    return CollectiveMessage::decode(bytes).status();
  };
  const Status ok_reason = rejected(good, 16, 0);  // reason kOk: not an error
  EXPECT_EQ(ok_reason.code(), StatusCode::kMalformedMessage);
  EXPECT_NE(ok_reason.message().find("not an error code"), std::string::npos) << ok_reason.message();
  EXPECT_EQ(rejected(good, 16, 200).code(), StatusCode::kMalformedMessage);  // no such code
  EXPECT_EQ(rejected(good, 17, 1).code(), StatusCode::kMalformedMessage);    // reason above a byte
  EXPECT_EQ(rejected(good, 12, 1).code(), StatusCode::kMalformedMessage);    // rank beyond 32 bits
  EXPECT_EQ(rejected(good, 4, 1).code(), StatusCode::kMalformedMessage);     // a copy id
  EXPECT_EQ(rejected(good, 24, 1).code(), StatusCode::kMalformedMessage);    // an rkey
  EXPECT_EQ(rejected(good, 28, 1).code(), StatusCode::kMalformedMessage);    // reserved
}

TEST(CollectiveMessage, MalformedBytesAreRejectedWithAReason) {
  CollectiveMessage m;
  m.type = CollectiveMessageType::kBytesRead;
  auto good = m.encode();
  std::vector<std::byte> short_msg(good.begin(), good.end() - 1);
  EXPECT_EQ(CollectiveMessage::decode(short_msg).status().code(), StatusCode::kMalformedMessage);
  auto bad_type = good;
  bad_type[0] = std::byte{9};
  EXPECT_EQ(CollectiveMessage::decode(bad_type).status().code(), StatusCode::kMalformedMessage);
  auto reserved = good;
  reserved[31] = std::byte{1};
  EXPECT_EQ(CollectiveMessage::decode(reserved).status().code(), StatusCode::kMalformedMessage);
  auto unused = good;
  unused[20] = std::byte{1};  // BYTES_READ has no ring size
  EXPECT_EQ(CollectiveMessage::decode(unused).status().code(), StatusCode::kMalformedMessage);
}

}  // namespace
}  // namespace tensorwire::collectives
