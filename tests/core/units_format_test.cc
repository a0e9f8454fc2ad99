#include "core/units_format.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace tensorwire {
namespace {

TEST(FormatBytes, SmallValuesArePlainBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1), "1 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
}

TEST(FormatBytes, LargerValuesUseBinaryUnitsWithThreeSignificantDigits) {
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(512 << 10), "512 KiB");
  EXPECT_EQ(format_bytes(1572864), "1.50 MiB");
  EXPECT_EQ(format_bytes(uint64_t{25} << 19), "12.5 MiB");
  EXPECT_EQ(format_bytes(uint64_t{5} << 30), "5.00 GiB");
  EXPECT_EQ(format_bytes(std::numeric_limits<uint64_t>::max()), "16.0 EiB");
}

TEST(FormatBytes, RoundingUpToTheNextUnitMovesToThatUnit) {
  EXPECT_EQ(format_bytes((1 << 20) - 1), "1.00 MiB");
}

TEST(FormatDuration, PicksTheUnitAndThreeSignificantDigits) {
  EXPECT_EQ(format_duration_ns(0), "0 ns");
  EXPECT_EQ(format_duration_ns(999), "999 ns");
  EXPECT_EQ(format_duration_ns(1000), "1.00 us");
  EXPECT_EQ(format_duration_ns(12'345), "12.3 us");
  EXPECT_EQ(format_duration_ns(123'456), "123 us");
  EXPECT_EQ(format_duration_ns(1'234'567), "1.23 ms");
  EXPECT_EQ(format_duration_ns(4'500'000'000), "4.50 s");
  EXPECT_EQ(format_duration_ns(1'234'000'000'000), "1234 s");
}

TEST(FormatDuration, RoundingNeverPrintsAThousandOfAUnit) {
  EXPECT_EQ(format_duration_ns(999'960), "1.00 ms");
  EXPECT_EQ(format_duration_ns(999'999'999), "1.00 s");
}

TEST(FormatDuration, NegativeDurationsKeepTheirSign) {
  EXPECT_EQ(format_duration_ns(-1500), "-1.50 us");
  EXPECT_EQ(format_duration_ns(-7), "-7 ns");
  EXPECT_FALSE(format_duration_ns(std::numeric_limits<int64_t>::min()).empty());
}

TEST(FormatCount, GroupsThousands) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1000), "1,000");
  EXPECT_EQ(format_count(1234567), "1,234,567");
}

RC_GTEST_PROP(FormatDuration, NeverPrintsMoreThanFourDigitsBeforeTheUnitBelowSeconds,
              (int64_t ns)) {
  const std::string s = format_duration_ns(ns);
  RC_ASSERT(!s.empty());
  const bool seconds = s.size() >= 2 && s.substr(s.size() - 2) == " s";
  if (!seconds) {
    const size_t space = s.find(' ');
    RC_ASSERT(space != std::string::npos);
    const std::string number = s.substr(0, space);
    // At most 3 digits plus sign and decimal point: "999", "-12.3", "1.00".
    RC_ASSERT(number.size() <= 5);
  }
}

}  // namespace
}  // namespace tensorwire
