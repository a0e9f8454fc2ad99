// IPv4 addresses and ports as backend_verbs reads them: from options
// ("10.77.0.1", "HOST:PORT") and from peers ("A.B.C.D:PORT" in the
// coordinator's all-gather). Peer text is untrusted, so parsing is strict:
// dotted quad, a decimal port, nothing else.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tensorwire::launch {

struct Ipv4Endpoint {
  in_addr address{};  // network byte order, as in sockaddr_in
  uint16_t port = 0;  // host byte order

  sockaddr_in to_sockaddr() const;
  // "A.B.C.D:PORT"
  std::string to_string() const;
  static Ipv4Endpoint from_sockaddr(const sockaddr_in& addr);
};

// "A.B.C.D" only. `what` names the input in the error ("TENSORWIRE_RDMA_ADDR").
Result<in_addr> parse_ipv4_address(std::string_view text, std::string_view what);

// "A.B.C.D:PORT" only, port 0..65535. For addresses peers send us.
Result<Ipv4Endpoint> parse_ipv4_endpoint(std::string_view text, std::string_view what);

// "HOST:PORT" where HOST is a dotted quad or a name the resolver maps to an IPv4
// address (getaddrinfo, AF_INET). For the coordinator address a user types.
Result<Ipv4Endpoint> resolve_host_port(std::string_view text, std::string_view what);

}  // namespace tensorwire::launch
