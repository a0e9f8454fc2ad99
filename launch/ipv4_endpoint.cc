#include "launch/ipv4_endpoint.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>

namespace tensorwire::launch {
namespace {

Status bad(std::string_view what, std::string_view text, std::string_view why) {
  std::string message(what);
  message += ": '";
  // Peer text may be long or hold control characters: quote at most 64
  // printable bytes of it.
  for (size_t i = 0; i < text.size() && i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    message += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (text.size() > 64) message += "...";
  message += "' ";
  message += why;
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// Splits at the last ':'; both halves non-empty.
bool split_host_port(std::string_view text, std::string_view* host, std::string_view* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return false;
  *host = text.substr(0, colon);
  *port = text.substr(colon + 1);
  return true;
}

bool parse_port(std::string_view text, uint16_t* port) {
  if (text.empty() || text.size() > 5) return false;
  uint32_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) return false;
  *port = static_cast<uint16_t>(value);
  return true;
}

}  // namespace

sockaddr_in Ipv4Endpoint::to_sockaddr() const {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr = address;
  addr.sin_port = htons(port);
  return addr;
}

std::string Ipv4Endpoint::to_string() const {
  char text[INET_ADDRSTRLEN] = {};
  if (inet_ntop(AF_INET, &address, text, sizeof text) == nullptr)
    return "?:" + std::to_string(port);
  return std::string(text) + ":" + std::to_string(port);
}

Ipv4Endpoint Ipv4Endpoint::from_sockaddr(const sockaddr_in& addr) {
  return Ipv4Endpoint{addr.sin_addr, ntohs(addr.sin_port)};
}

Result<in_addr> parse_ipv4_address(std::string_view text, std::string_view what) {
  // inet_pton accepts exactly the dotted quad (no octal, no short forms), but
  // wants a terminated string: copy, and refuse embedded NULs first.
  if (text.empty() || text.size() >= INET_ADDRSTRLEN || text.find('\0') != std::string_view::npos) {
    return bad(what, text, "is not an IPv4 address (want A.B.C.D)");
  }
  const std::string copy(text);
  in_addr address{};
  if (inet_pton(AF_INET, copy.c_str(), &address) != 1) {
    return bad(what, text, "is not an IPv4 address (want A.B.C.D)");
  }
  return address;
}

Result<Ipv4Endpoint> parse_ipv4_endpoint(std::string_view text, std::string_view what) {
  std::string_view host, port_text;
  if (!split_host_port(text, &host, &port_text)) {
    return bad(what, text, "is not an IPv4 endpoint (want A.B.C.D:PORT)");
  }
  Result<in_addr> address = parse_ipv4_address(host, what);
  if (!address.is_ok()) return bad(what, text, "is not an IPv4 endpoint (want A.B.C.D:PORT)");
  uint16_t port = 0;
  if (!parse_port(port_text, &port)) return bad(what, text, "has no port in 0..65535");
  return Ipv4Endpoint{*address, port};
}

Result<Ipv4Endpoint> resolve_host_port(std::string_view text, std::string_view what) {
  std::string_view host, port_text;
  if (!split_host_port(text, &host, &port_text)) {
    return bad(what, text, "is not HOST:PORT");
  }
  uint16_t port = 0;
  if (!parse_port(port_text, &port)) return bad(what, text, "has no port in 0..65535");
  if (Result<in_addr> literal = parse_ipv4_address(host, what); literal.is_ok()) {
    return Ipv4Endpoint{*literal, port};
  }
  if (host.find('\0') != std::string_view::npos) return bad(what, text, "is not HOST:PORT");
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string host_copy(host);
  const int rc = getaddrinfo(host_copy.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr || found->ai_addrlen < sizeof(sockaddr_in)) {
    std::string why = "names no IPv4 host: getaddrinfo: ";
    why += gai_strerror(rc);
    if (found != nullptr) freeaddrinfo(found);
    return bad(what, text, why);
  }
  sockaddr_in addr{};
  std::memcpy(&addr, found->ai_addr, sizeof addr);
  freeaddrinfo(found);
  return Ipv4Endpoint{addr.sin_addr, port};
}

}  // namespace tensorwire::launch
