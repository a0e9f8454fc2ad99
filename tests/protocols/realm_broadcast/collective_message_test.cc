// The collective's control messages: round trips, and a peer's bad bytes are
// an error value, never a crash.
#include "core/protocols/realm_broadcast/collective_message.h"

#include <gtest/gtest.h>

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
