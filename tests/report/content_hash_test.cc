#include "report/content_hash.h"

#include <gtest/gtest.h>

namespace tensorwire::report {
namespace {

TEST(Fnv1a64, MatchesTheReferenceVectors) {
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8ull);
}

TEST(Fnv1a64, OneChangedByteChangesTheHash) {
  EXPECT_NE(fnv1a_64("{\"ts\":1.500}"), fnv1a_64("{\"ts\":1.501}"));
}

TEST(FormatHash, IsHexWithAllSixteenDigits) {
  EXPECT_EQ(format_hash(0x1ull), "0x0000000000000001");
  EXPECT_EQ(format_hash(0xcbf29ce484222325ull), "0xcbf29ce484222325");
}

}  // namespace
}  // namespace tensorwire::report
