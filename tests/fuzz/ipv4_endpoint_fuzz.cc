// IPv4 addresses and endpoints as peers send them in the coordinator's
// all-gather (launch/ipv4_endpoint.h): any text. Parsing is strict and must
// never crash; an accepted endpoint prints as text that parses back to it.
// resolve_host_port() is left out: for names it asks the resolver (DNS),
// which a fuzzer must not do thousands of times a second; its literal case is
// parse_ipv4_address(), fuzzed here.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "launch/ipv4_endpoint.h"
#include "tests/fuzz/fuzz_check.h"

using namespace tensorwire;
using namespace tensorwire::launch;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (Result<in_addr> address = parse_ipv4_address(text, "fuzz")) {
    std::string printed = Ipv4Endpoint{*address, 0}.to_string();  // "A.B.C.D:0"
    printed.resize(printed.size() - 2);
    Result<in_addr> again = parse_ipv4_address(printed, "again");
    FUZZ_CHECK(again.is_ok() && again->s_addr == address->s_addr, "address round trip");
  } else {
    FUZZ_CHECK(address.status().message().rfind("fuzz: '", 0) == 0, "error names the input");
  }
  Result<Ipv4Endpoint> endpoint = parse_ipv4_endpoint(text, "fuzz");
  if (!endpoint) return 0;
  Result<Ipv4Endpoint> again = parse_ipv4_endpoint(endpoint->to_string(), "again");
  FUZZ_CHECK(again.is_ok() && again->address.s_addr == endpoint->address.s_addr &&
                 again->port == endpoint->port,
             "endpoint round trip");
  return 0;
}
