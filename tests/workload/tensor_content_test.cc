#include "core/workload/tensor_content.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

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
