// SparseBytes, and timing-only memory through it: the bytes read as a dense
// buffer's would, whatever order the spans were taken in, and only the
// blocks used are backed.
#include "backend_sim/sparse_bytes.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend_sim/sim_memory.h"
#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

constexpr uint64_t kBlock = SparseBytes::kBlockBytes;

bool all_zero(std::span<const std::byte> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
}

TEST(SparseBytes, NewBytesReadZeroAndBackOnlyTheBlocksASpanCovers) {
  SparseBytes s(100000);
  EXPECT_EQ(s.size(), 100000u);
  EXPECT_EQ(s.backed_bytes(), 0u);
  EXPECT_TRUE(s.block(3).empty()) << "a block never used reads as none: all zero";
  std::span<std::byte> one = s.span(1000, 100);  // blocks 3 and 4 (1024 is a boundary)
  ASSERT_EQ(one.size(), 100u);
  EXPECT_TRUE(all_zero(one));
  EXPECT_EQ(s.backed_bytes(), 2 * kBlock);
  EXPECT_FALSE(s.block(3).empty());
  EXPECT_TRUE(s.block(5).empty());
  EXPECT_TRUE(s.span(0, 0).empty());
  EXPECT_EQ(s.backed_bytes(), 2 * kBlock) << "an empty span backs nothing";
}

TEST(SparseBytes, BlocksBackedApartAreMovedTogetherWithTheirBytes) {
  SparseBytes s(10 * kBlock);
  std::span<std::byte> first = s.span(0, 10);
  std::fill(first.begin(), first.end(), std::byte{0x11});
  std::span<std::byte> third = s.span(2 * kBlock + 5, 10);
  std::fill(third.begin(), third.end(), std::byte{0x33});
  // Blocks 0 and 2 were backed by two requests; block 1 never was. One span
  // over all three makes them consecutive, moving the bytes written.
  std::span<std::byte> all = s.span(0, 3 * kBlock);
  ASSERT_EQ(all.size(), 3 * kBlock);
  for (uint64_t i = 0; i < 3 * kBlock; ++i) {
    const bool in_first = i < 10;
    const bool in_third = i >= 2 * kBlock + 5 && i < 2 * kBlock + 15;
    const std::byte want = in_first ? std::byte{0x11} : in_third ? std::byte{0x33} : std::byte{0};
    ASSERT_EQ(all[i], want) << "byte " << i;
  }
  EXPECT_EQ(s.block(1).data(), s.block(0).data() + kBlock) << "consecutive in storage";
  // Already consecutive: the same storage again, nothing more backed.
  const uint64_t backed = s.backed_bytes();
  EXPECT_EQ(s.span(kBlock, kBlock).data(), all.data() + kBlock);
  EXPECT_EQ(s.backed_bytes(), backed);
}

// A control ring as the zero-copy protocol lays it out: slots of the longest
// message, a short message at the start of each. Only the blocks the
// messages cover are backed.
TEST(SparseBytes, AControlRingBacksTheBlocksItsMessagesCover) {
  constexpr uint64_t kSlot = 1344;
  constexpr uint64_t kSlots = 128;
  SparseBytes ring(kSlot * kSlots);
  for (uint64_t slot = 0; slot < kSlots; ++slot) {
    std::span<std::byte> message = ring.span(slot * kSlot, 90);
    std::fill(message.begin(), message.end(), std::byte(slot));
  }
  for (uint64_t slot = 0; slot < kSlots; ++slot) {
    std::span<std::byte> message = ring.span(slot * kSlot, 90);
    ASSERT_TRUE(std::all_of(message.begin(), message.end(), [&](std::byte b) { return b == std::byte(slot); }));
  }
  EXPECT_LE(ring.backed_bytes(), kSlots * 2 * kBlock);
  EXPECT_LT(ring.backed_bytes() * 4, ring.size()) << "a fraction of the dense ring";
}

// A forgotten range reads as zero; blocks it covers whole, or whose other
// bytes are zero, go back to the store and are taken again by later spans;
// a block still holding other bytes keeps them.
TEST(SparseBytes, AForgottenRangeReadsZeroAndItsBlocksAreTakenAgain) {
  SparseBytes s(10 * kBlock);
  std::span<std::byte> two = s.span(kBlock - 10, 20);  // blocks 0 and 1
  std::fill(two.begin(), two.end(), std::byte{0x22});
  std::span<std::byte> other = s.span(2 * kBlock + 10, 5);  // block 2
  std::fill(other.begin(), other.end(), std::byte{0x44});
  const uint64_t backed = s.backed_bytes();
  EXPECT_EQ(backed, 3 * kBlock);
  // [kBlock - 10, 2 * kBlock + 12): blocks 0 and 1 hold nothing else and go
  // back as one run; block 2 holds bytes past the range and stays.
  s.forget(kBlock - 10, kBlock + 22);
  EXPECT_TRUE(s.block(0).empty());
  EXPECT_TRUE(s.block(1).empty());
  ASSERT_FALSE(s.block(2).empty());
  EXPECT_TRUE(all_zero(s.block(2).first(12)));
  EXPECT_EQ(s.block(2)[12], std::byte{0x44}) << "bytes outside the range are kept";
  EXPECT_TRUE(all_zero(s.block(2).subspan(15)));
  EXPECT_EQ(s.free_bytes(), 2 * kBlock);
  // A span of two blocks elsewhere takes the free run: nothing new backed.
  std::span<std::byte> again = s.span(5 * kBlock + 100, kBlock);
  EXPECT_TRUE(all_zero(again));
  EXPECT_EQ(s.backed_bytes(), backed);
  EXPECT_EQ(s.free_bytes(), 0u);
  // A span of one block splits a longer free run.
  s.forget(5 * kBlock, 2 * kBlock);
  EXPECT_EQ(s.free_bytes(), 2 * kBlock);
  EXPECT_TRUE(all_zero(s.span(9 * kBlock, 1)));
  EXPECT_EQ(s.free_bytes(), kBlock);
  EXPECT_EQ(s.backed_bytes(), backed);
}

// A control ring whose slots are handed back to the NIC as the protocol
// reposts them (forget, as SimMemorySpace::receive_posted does): cycling
// through its slots many times keeps storage for the few messages in it.
TEST(SparseBytes, ARingWhoseSlotsAreForgottenKeepsStorageForTheMessagesInIt) {
  constexpr uint64_t kSlot = 1344;
  constexpr uint64_t kSlots = 128;
  SparseBytes ring(kSlot * kSlots);
  for (uint64_t n = 0; n < 20 * kSlots; ++n) {
    const uint64_t slot = n % kSlots;
    const uint64_t length = 60 + (n * 37) % 400;  // some messages cross a block boundary
    std::span<std::byte> message = ring.span(slot * kSlot, length);
    std::fill(message.begin(), message.end(), std::byte(1 + n % 255));
    ASSERT_TRUE(std::all_of(message.begin(), message.end(),
                            [&](std::byte b) { return b == std::byte(1 + n % 255); }));
    ring.forget(slot * kSlot, kSlot);  // decoded, reposted
  }
  EXPECT_LE(ring.backed_bytes(), 16 * kBlock) << "not a block per slot ever used";
  EXPECT_TRUE(all_zero(ring.span(0, ring.size())));
}

// Random writes and reads, spans taken in any order over any ranges, against
// a dense buffer: every read sees what the dense buffer holds.
RC_GTEST_PROP(SparseBytes, ReadsAsADenseBufferWhateverTheOrderOfSpans, ()) {
  const uint64_t size = *rc::gen::inRange<uint64_t>(1, 8 * kBlock + 77);
  SparseBytes sparse(size);
  std::vector<std::byte> dense(size);
  const auto ops = *rc::gen::inRange(1, 60);
  for (int op = 0; op < ops; ++op) {
    const uint64_t offset = *rc::gen::inRange<uint64_t>(0, size);
    const uint64_t length = *rc::gen::inRange<uint64_t>(0, size - offset + 1);
    if (*rc::gen::inRange(0, 4) == 0) {  // a receive posted there: it reads zero
      sparse.forget(offset, length);
      std::fill_n(dense.begin() + static_cast<long>(offset), length, std::byte{0});
      continue;
    }
    std::span<std::byte> span = sparse.span(offset, length);
    RC_ASSERT(span.size() == length);
    RC_ASSERT(std::equal(span.begin(), span.end(), dense.begin() + static_cast<long>(offset)));
    if (*rc::gen::arbitrary<bool>()) {
      const auto value = std::byte(*rc::gen::inRange(1, 256));
      std::fill(span.begin(), span.end(), value);
      std::fill_n(dense.begin() + static_cast<long>(offset), length, value);
    }
  }
  for (uint64_t b = 0; b * kBlock < size; ++b) {
    const uint64_t length = std::min(kBlock, size - b * kBlock);
    std::span<const std::byte> block = sparse.block(b);
    const std::span<const std::byte> want(dense.data() + b * kBlock, length);
    const bool same = block.empty() ? all_zero(want) : std::equal(want.begin(), want.end(), block.begin());
    RC_ASSERT(same);
  }
  RC_ASSERT(std::equal(dense.begin(), dense.end(), sparse.span(0, size).begin()));
}

// Simulated memory in timing-only mode: a ring-sized allocation keeps its
// meaning (written bytes read back through every path; a copy within it
// moves the right bytes) while holding a fraction of its size.
TEST(SimMemory, TimingOnlyRingsAreBackedWhereMessagesLand) {
  SimOptions options;
  options.payload = false;
  SimFixture f(Cluster{}, options);
  auto& m = dynamic_cast<SimMemorySpace&>(f.env(0).memory);
  constexpr uint64_t kSlot = 1344;
  const Buffer ring = *m.allocate(MemoryKind::kHostPinned, 0, 128 * kSlot);
  ASSERT_GE(ring.length, SimMemorySpace::kSparseMinBytes);
  for (uint64_t slot = 0; slot < 128; ++slot) {
    std::span<std::byte> landed = m.bytes_at(ring.addr + slot * kSlot, 60, /*for_write=*/true);
    ASSERT_EQ(landed.size(), 60u);
    std::fill(landed.begin(), landed.end(), std::byte(slot + 1));
  }
  std::vector<std::byte> out(60);
  ASSERT_TRUE(m.read_bytes(ring, 77 * kSlot, out).is_ok());
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::byte b) { return b == std::byte{78}; }));
  // A copy from slot 3 into the gap after slot 2's message: two ranges of one
  // allocation whose blocks were backed apart.
  ASSERT_TRUE(m.cpu_copy(ring, 2 * kSlot + 1000, ring, 3 * kSlot, 60).is_ok());
  std::span<std::byte> view = m.host_view(Buffer{ring.addr + 2 * kSlot + 1000, 60, ring.kind, 0});
  EXPECT_TRUE(std::all_of(view.begin(), view.end(), [](std::byte b) { return b == std::byte{4}; }));
  ASSERT_TRUE(m.read_bytes(ring, 3 * kSlot, out).is_ok());
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::byte b) { return b == std::byte{4}; }));
  EXPECT_TRUE(all_zero(m.bytes_at(ring.addr + 5 * kSlot + 500, 200)))
      << "bytes no message covered read zero";
  EXPECT_EQ(m.payload_bytes_held(), ring.length) << "the allocation holds its bytes, as dense";
}

// A receive posted on a timing-only ring's slot hands its bytes to the NIC:
// they read as zero until a message lands, and the neighbouring slots keep
// theirs. Payload mode keeps every byte.
TEST(SimMemory, AReceivePostedOnATimingOnlyRingSlotForgetsItsBytes) {
  for (const bool payload : {false, true}) {
    SimOptions options;
    options.payload = payload;
    SimFixture f(Cluster{}, options);
    auto& m = dynamic_cast<SimMemorySpace&>(f.env(0).memory);
    constexpr uint64_t kSlot = 1344;
    const Buffer ring = *m.allocate(MemoryKind::kHostPinned, 0, 128 * kSlot);
    for (uint64_t slot = 0; slot < 3; ++slot) {
      std::span<std::byte> landed = m.bytes_at(ring.addr + slot * kSlot, 300, /*for_write=*/true);
      std::fill(landed.begin(), landed.end(), std::byte(slot + 1));
    }
    m.receive_posted(ring.addr + kSlot, kSlot);
    std::vector<std::byte> out(300);
    ASSERT_TRUE(m.read_bytes(ring, kSlot, out).is_ok());
    const std::byte want = payload ? std::byte{2} : std::byte{0};
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [&](std::byte b) { return b == want; }))
        << (payload ? "payload mode keeps the bytes" : "timing-only: the NIC's now, zero");
    for (uint64_t slot : {0u, 2u}) {
      ASSERT_TRUE(m.read_bytes(ring, slot * kSlot, out).is_ok());
      EXPECT_TRUE(std::all_of(out.begin(), out.end(), [&](std::byte b) { return b == std::byte(slot + 1); }))
          << "slot " << slot << " keeps its message";
    }
  }
}

}  // namespace
}  // namespace tensorwire::sim::testing
