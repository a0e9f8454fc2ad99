// MVAPICH2-GPU's control message: every type round-trips, encode refuses what
// decode would refuse, decode names the bad field and its offset, every
// truncation is refused, and mutated bytes never read past the end (what
// decodes re-encodes to the same bytes).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/protocols/mvapich2_gpu/mv2_message.h"

namespace tensorwire::mvapich2 {
namespace {

std::vector<std::byte> whole(const Message& m) {
  Result<std::vector<std::byte>> h = encode_header(m);
  EXPECT_TRUE(h.is_ok()) << h.status().message();
  std::vector<std::byte> out = *h;
  if (m.type == MessageType::kEager) out.resize(out.size() + m.tensor_bytes, std::byte{7});
  return out;
}

std::vector<Message> samples() {
  Message request;
  request.name = "w";
  request.step_id = 3;
  Message eager;
  eager.type = MessageType::kEager;
  eager.name = "t";
  eager.shape.dims = {2};
  eager.tensor_bytes = 8;
  Message rts = eager;
  rts.type = MessageType::kRts;
  rts.transfer = 5;
  rts.flag = true;
  rts.shape.dims = {1000, 3};
  rts.tensor_bytes = 12000;
  Message cts;
  cts.type = MessageType::kCts;
  cts.transfer = 5;
  cts.block = 2;
  cts.block_bytes = 4096;
  cts.rkey = 77;
  cts.addrs = {0x1000, 0x2000, 0x3000};
  Message fin;
  fin.type = MessageType::kFin;
  fin.transfer = 5;
  fin.block = 4;
  fin.credits = 9;
  Message error;
  error.type = MessageType::kError;
  error.name = "t";
  error.transfer = 5;
  error.flag = true;
  error.error_code = StatusCode::kAborted;
  error.error_message = "step aborted";
  Message credit;
  credit.type = MessageType::kCredit;
  credit.credits = 3;
  return {request, eager, rts, cts, fin, error, credit};
}

TEST(Mv2Message, EveryTypeRoundTrips) {
  for (const Message& m : samples()) {
    const std::vector<std::byte> bytes = whole(m);
    Result<Decoded> d = decode(bytes);
    ASSERT_TRUE(d.is_ok()) << message_type_name(m.type) << ": " << d.status().message();
    EXPECT_EQ(d->message.type, m.type);
    EXPECT_EQ(d->message.name, m.name);
    EXPECT_EQ(d->message.transfer, m.transfer);
    EXPECT_EQ(d->message.block, m.block);
    EXPECT_EQ(d->message.flag, m.flag);
    EXPECT_EQ(d->message.addrs, m.addrs);
    EXPECT_EQ(d->message.tensor_bytes, m.tensor_bytes);
    EXPECT_EQ(d->message.error_message, m.error_message);
    EXPECT_EQ(d->payload_offset, header_size(m));
    EXPECT_EQ(whole(d->message), bytes) << "canonical: re-encodes to the same bytes";
  }
}

TEST(Mv2Message, EncodeRefusesWhatDecodeWould) {
  Message cts = samples()[3];
  cts.addrs.clear();
  EXPECT_FALSE(encode_header(cts).is_ok()) << "a CTS names at least one address";
  cts.addrs = {1, 2};
  cts.flag = true;
  EXPECT_FALSE(encode_header(cts).is_ok()) << "a CTS to the user's buffer names one";
  cts = samples()[3];
  cts.addrs = {~uint64_t{0} - 10};
  EXPECT_FALSE(encode_header(cts).is_ok()) << "a vbuf range that wraps";
  Message rts = samples()[2];
  rts.transfer = 0;
  EXPECT_FALSE(encode_header(rts).is_ok()) << "an RTS names its transfer";
  Message fin = samples()[4];
  fin.rkey = 1;
  EXPECT_FALSE(encode_header(fin).is_ok()) << "only a CTS names remote memory";
  Message error = samples()[5];
  error.transfer = 0;
  EXPECT_FALSE(encode_header(error).is_ok()) << "an ERROR that ends a transfer names it";
}

TEST(Mv2Message, DecodeNamesTheFieldAndOffset) {
  std::vector<std::byte> bytes = whole(samples()[3]);  // a CTS
  bytes[0] = std::byte{0x11};
  Result<Decoded> d = decode(bytes);
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().code(), StatusCode::kMalformedMessage);
  EXPECT_NE(d.status().message().find("format at byte 0"), std::string::npos);
  bytes = whole(samples()[3]);
  bytes[6 + 8 + 4 + 4] = std::byte{2};  // flag (no name)
  d = decode(bytes);
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find("flag at byte 22"), std::string::npos) << d.status().message();
  bytes = whole(samples()[3]);
  bytes[6 + 8 + 4 + 4 + 1 + 8 + 4] = std::byte{65};  // num_addrs
  d = decode(bytes);
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find("num_addrs at byte 35"), std::string::npos)
      << d.status().message();
  bytes = whole(samples()[4]);  // a FIN with bytes after it
  bytes.push_back(std::byte{0});
  d = decode(bytes);
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find("content"), std::string::npos);
}

TEST(Mv2Message, EveryTruncationIsRefused) {
  for (const Message& m : samples()) {
    const std::vector<std::byte> bytes = whole(m);
    for (size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(decode(std::span(bytes).first(n)).is_ok())
          << message_type_name(m.type) << " cut at " << n;
    }
  }
}

TEST(Mv2Message, MutatedBytesDecodeCanonicallyOrAreRefused) {
  uint64_t state = 12345;
  size_t decoded = 0;
  for (const Message& m : samples()) {
    const std::vector<std::byte> original = whole(m);
    for (int round = 0; round < 400; ++round) {
      std::vector<std::byte> bytes = original;
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      bytes[(state >> 33) % bytes.size()] = static_cast<std::byte>(state >> 56);
      Result<Decoded> d = decode(bytes);
      if (!d.is_ok()) continue;
      ++decoded;
      Result<std::vector<std::byte>> header = encode_header(d->message);
      ASSERT_TRUE(header.is_ok());
      EXPECT_TRUE(std::equal(header->begin(), header->end(), bytes.begin()));
    }
  }
  EXPECT_GT(decoded, 0u) << "some mutations (credits, ids, addresses) are valid messages";
}

}  // namespace
}  // namespace tensorwire::mvapich2
