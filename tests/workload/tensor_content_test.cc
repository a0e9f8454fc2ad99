#include "core/workload/tensor_content.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <span>
#include <vector>

namespace tensorwire {
namespace {

TEST(TensorContent, DependsOnSeedStepAndName) {
  EXPECT_NE(content_key(1, 1, "w"), content_key(2, 1, "w"));
  EXPECT_NE(content_key(1, 1, "w"), content_key(1, 2, "w"));
  EXPECT_NE(content_key(1, 1, "w"), content_key(1, 1, "b"));
  EXPECT_EQ(content_key(7, 3, "fc6/w"), content_key(7, 3, "fc6/w"));
}

RC_GTEST_PROP(TensorContent, FilledBytesMatchAndAnyFlippedByteIsFound,
              (uint64_t key, uint16_t size_raw, uint16_t flip_raw)) {
  size_t size = size_raw % 2048 + 1;
  std::vector<std::byte> data(size);
  fill_content(key, data);
  RC_ASSERT(first_content_mismatch(key, data) == size);
  size_t flip = flip_raw % size;
  data[flip] ^= std::byte{0x5a};
  RC_ASSERT(first_content_mismatch(key, data) == flip);
}

// The harness fills and checks large tensors piece by piece (16 MiB pieces
// in the workload driver): pieces at any offset, aligned to the content's
// words or not, make the same bytes as one fill, and a check piece by piece
// finds a single wrong byte at its offset in the whole tensor.
RC_GTEST_PROP(TensorContent, PiecesMatchTheWholeAndFindASingleWrongByte,
              (uint64_t key, uint16_t size_raw, uint8_t piece_raw, uint16_t flip_raw)) {
  const size_t size = size_raw % 4096 + 1;
  const size_t piece = piece_raw % 61 + 1;
  std::vector<std::byte> whole(size);
  fill_content(key, whole);
  std::vector<std::byte> pieces(size);
  for (size_t at = 0; at < size; at += piece) {
    fill_content_at(key, at, std::span<std::byte>(pieces).subspan(at, std::min(piece, size - at)));
  }
  RC_ASSERT(pieces == whole);
  const size_t flip = flip_raw % size;
  pieces[flip] ^= std::byte{0x01};
  size_t found = size;
  for (size_t at = 0; at < size && found == size; at += piece) {
    const std::span<const std::byte> part =
        std::span<const std::byte>(pieces).subspan(at, std::min(piece, size - at));
    const size_t bad = first_content_mismatch_at(key, at, part);
    if (bad != part.size()) found = at + bad;
  }
  RC_ASSERT(found == flip);
}

TEST(TensorContent, AStaleStepDoesNotPassForTheNextOne) {
  std::vector<std::byte> step1(4096);
  fill_content(content_key(1, 1, "t"), step1);
  EXPECT_LT(first_content_mismatch(content_key(1, 2, "t"), step1), step1.size());
}

TEST(TensorContent, StringsHaveRequestedShapeAndAreDeterministic) {
  auto a = string_content(42, 5, 7);
  ASSERT_EQ(a.size(), 5u);
  for (const auto& s : a) EXPECT_EQ(s.size(), 7u);
  EXPECT_EQ(a, string_content(42, 5, 7));
  EXPECT_NE(a, string_content(43, 5, 7));
}

}  // namespace
}  // namespace tensorwire
