// Strict parsing of addresses from options and from peers.
#include "launch/ipv4_endpoint.h"

#include <gtest/gtest.h>

#include <string>

namespace tensorwire::launch {
namespace {

TEST(Ipv4Endpoint, ParsesDottedQuadAndPort) {
  Result<Ipv4Endpoint> e = parse_ipv4_endpoint("10.77.0.1:4791", "test");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(e->port, 4791);
  EXPECT_EQ(e->to_string(), "10.77.0.1:4791");
  EXPECT_EQ(Ipv4Endpoint::from_sockaddr(e->to_sockaddr()).to_string(), "10.77.0.1:4791");
}

TEST(Ipv4Endpoint, RefusesAnythingElseNamingTheInput) {
  for (const char* bad : {"", ":", "10.77.0.1", "10.77.0.1:", ":80", "10.77.0:80",
                          "10.77.0.1:65536", "10.77.0.1:-1", "10.77.0.1:8a", "10.77.0.1:123456",
                          "host:80", "010.77.0.1:80", "10.77.0.1 :80", "10.77.0.256:1"}) {
    Result<Ipv4Endpoint> e = parse_ipv4_endpoint(bad, "rank 3's address");
    EXPECT_FALSE(e.is_ok()) << bad;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(e.status().message().rfind("rank 3's address: '", 0), 0u) << e.status().message();
  }
}

TEST(Ipv4Endpoint, QuotesPeerTextSafely) {
  std::string nasty(200, 'A');
  nasty[3] = '\n';
  nasty[4] = '\0';
  Result<Ipv4Endpoint> e = parse_ipv4_endpoint(nasty, "peer");
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().message().find('\n'), std::string::npos);
  EXPECT_EQ(e.status().message().find('\0'), std::string::npos);
  EXPECT_LT(e.status().message().size(), 200u);
}

TEST(Ipv4Endpoint, ResolvesHostPort) {
  Result<Ipv4Endpoint> literal = resolve_host_port("127.0.0.1:9000", "coordinator");
  ASSERT_TRUE(literal.is_ok());
  EXPECT_EQ(literal->to_string(), "127.0.0.1:9000");
  Result<Ipv4Endpoint> named = resolve_host_port("localhost:9000", "coordinator");
  ASSERT_TRUE(named.is_ok()) << named.status().to_string();
  EXPECT_EQ(named->port, 9000);
  EXPECT_FALSE(resolve_host_port("localhost", "coordinator").is_ok());
  EXPECT_FALSE(resolve_host_port("no-such-host.invalid:1", "coordinator").is_ok());
}

}  // namespace
}  // namespace tensorwire::launch
