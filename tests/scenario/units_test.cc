// Quantities with units, as people write them.
#include "scenario/units.h"

#include <gtest/gtest.h>

#include <string>

namespace tensorwire {
namespace {

double bw(const std::string& text) {
  Result<double> r = parse_bandwidth_bytes_per_s(text);
  EXPECT_TRUE(r.is_ok()) << text << ": " << r.status().to_string();
  return r.is_ok() ? *r : -1;
}

TimeNs dur(const std::string& text) {
  Result<TimeNs> r = parse_duration_ns(text);
  EXPECT_TRUE(r.is_ok()) << text << ": " << r.status().to_string();
  return r.is_ok() ? *r : -1;
}

uint64_t sz(const std::string& text) {
  Result<uint64_t> r = parse_bytes(text);
  EXPECT_TRUE(r.is_ok()) << text << ": " << r.status().to_string();
  return r.is_ok() ? *r : 0;
}

TEST(Bandwidth, BitsPerSecondAreAnEighthOfBytes) {
  EXPECT_DOUBLE_EQ(bw("100Gbps"), 12.5e9);
  EXPECT_DOUBLE_EQ(bw("100 Gbps"), 12.5e9);
  EXPECT_DOUBLE_EQ(bw("100Gb/s"), 12.5e9);
  EXPECT_DOUBLE_EQ(bw("100Gbit/s"), 12.5e9);
  EXPECT_DOUBLE_EQ(bw("56gbps"), 7e9);
  EXPECT_DOUBLE_EQ(bw("800Mbps"), 1e8);
  EXPECT_DOUBLE_EQ(bw("1.6Tbps"), 2e11);
  EXPECT_DOUBLE_EQ(bw("8bps"), 1);
  EXPECT_DOUBLE_EQ(bw("8Kibps"), 1024);
}

TEST(Bandwidth, BytesPerSecondDecimalAndBinary) {
  EXPECT_DOUBLE_EQ(bw("12GB/s"), 12e9);
  EXPECT_DOUBLE_EQ(bw("12.5GBps"), 12.5e9);
  EXPECT_DOUBLE_EQ(bw("10GiB/s"), 10.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(bw("500MB/s"), 5e8);
  EXPECT_DOUBLE_EQ(bw("3MiB/s"), 3.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(bw("1KB/s"), 1000);
  EXPECT_DOUBLE_EQ(bw("2kB/s"), 2000);
  EXPECT_DOUBLE_EQ(bw("1B/s"), 1);
  EXPECT_DOUBLE_EQ(bw("1e9B/s"), 1e9);
}

TEST(Bandwidth, RejectsWhatIsNotARate) {
  for (const char* bad : {"", "100", "Gbps", "-1Gbps", "0Gbps", "100Gbs", "100 G", "1.5 us", "abc",
                          "1..5Gbps", "infGbps", "nanGB/s", "100Xbps", "1e999GB/s", "12 GB/ s"}) {
    Result<double> r = parse_bandwidth_bytes_per_s(bad);
    EXPECT_FALSE(r.is_ok()) << "'" << bad << "' parsed as " << (r.is_ok() ? *r : 0);
  }
}

TEST(Bandwidth, ErrorSaysWhatWouldBeAccepted) {
  Result<double> r = parse_bandwidth_bytes_per_s("100Gbs");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("unknown unit 'Gbs'"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("100Gbps"), std::string::npos);
}

TEST(Duration, EveryUnitToNanoseconds) {
  EXPECT_EQ(dur("800ns"), 800);
  EXPECT_EQ(dur("1.5us"), 1500);
  EXPECT_EQ(dur("1.5 us"), 1500);
  EXPECT_EQ(dur("2\xC2\xB5s"), 2000);  // micro sign
  EXPECT_EQ(dur("2\xCE\xBCs"), 2000);  // Greek mu
  EXPECT_EQ(dur("30ms"), 30000000);
  EXPECT_EQ(dur("2s"), 2000000000);
  EXPECT_EQ(dur("0s"), 0);
  EXPECT_EQ(dur("0"), 0);
  EXPECT_EQ(dur("0.4ns"), 0);
  EXPECT_EQ(dur("1.2344us"), 1234);  // to the nearest nanosecond
  EXPECT_EQ(dur("0.0006us"), 1);
  EXPECT_EQ(dur("1e3ns"), 1000);
  EXPECT_EQ(dur("9223372036s"), 9223372036000000000);
}

TEST(Duration, RejectsWhatIsNotADuration) {
  for (const char* bad : {"", "5", "1.5", "-1us", "us", "1.5 sec", "1min", "1h", "10Gbps",
                          "9223372037s", "1e300s", "1.5uss"}) {
    EXPECT_FALSE(parse_duration_ns(bad).is_ok()) << "'" << bad << "'";
  }
}

TEST(Bytes, DecimalAndBinaryPrefixes) {
  EXPECT_EQ(sz("0"), 0u);
  EXPECT_EQ(sz("4096"), 4096u);
  EXPECT_EQ(sz("16B"), 16u);
  EXPECT_EQ(sz("16MiB"), 16u << 20);
  EXPECT_EQ(sz("16 MiB"), 16u << 20);
  EXPECT_EQ(sz("1.5KiB"), 1536u);
  EXPECT_EQ(sz("1.5GB"), 1500000000u);
  EXPECT_EQ(sz("2TiB"), 2ull << 40);
  EXPECT_EQ(sz("3kB"), 3000u);
  // A plain integer is exact even above 2^53.
  EXPECT_EQ(sz("18446744073709551615"), 18446744073709551615ull);
}

TEST(Bytes, RejectsFractionsNegativesAndUnknownUnits) {
  for (const char* bad : {"", "-1", "1.5B", "0.5", "16MB/s", "16Mb", "16MiBs", "16XB",
                          "18446744073709551616", "1e30TiB", "KiB"}) {
    EXPECT_FALSE(parse_bytes(bad).is_ok()) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace tensorwire
