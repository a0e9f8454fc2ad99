// TCP with a deadline on every call, for the bootstrap coordinator: a rank
// that never comes, a peer that stops mid-message or a coordinator that is not
// up yet ends in a Status that says what was awaited and for how long, never
// in a hang. Sockets are non-blocking; waiting is poll() bounded by the
// deadline.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "launch/ipv4_endpoint.h"
#include "core/status.h"

namespace tensorwire::launch {

using SteadyClock = std::chrono::steady_clock;
using Deadline = SteadyClock::time_point;

// Milliseconds from now until `deadline`, clamped to [0, INT_MAX] for poll().
int milliseconds_until(Deadline deadline);

// Owns one socket descriptor; closes it when destroyed.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  int release();

 private:
  int fd_ = -1;
};

// A listening socket on `at` (port 0: the kernel picks one; see local_port).
Result<Socket> listen_tcp(const Ipv4Endpoint& at, int backlog);
Result<uint16_t> local_port(const Socket& socket);

// One connection from `listener`, or an error at the deadline. `peer` gets
// the connecting side's "A.B.C.D:PORT".
Result<Socket> accept_before(const Socket& listener, Deadline deadline, std::string* peer,
                             std::string_view waiting_for);

// Connects to `to`, retrying while nobody listens there yet (ECONNREFUSED)
// until the deadline: the coordinator may start after the ranks.
Result<Socket> connect_before(const Ipv4Endpoint& to, Deadline deadline, std::string_view what);

// Makes a connection whose peer goes silent (its host gone, so no FIN ever
// comes) fail within about `silence` (at least a second): TCP keepalive
// probes once it has been idle for half of it, and TCP_USER_TIMEOUT for data
// left unacknowledged. The socket then reports ETIMEDOUT.
Status fail_when_silent(const Socket& socket, std::chrono::milliseconds silence,
                        std::string_view peer);

// Sends all of `bytes` if the socket takes them at once, never waiting: for a
// last word before closing. Whether it did.
bool send_now(const Socket& socket, std::span<const std::byte> bytes);

// All of `bytes`, or an error naming `peer`.
Status send_all(const Socket& socket, std::span<const std::byte> bytes, Deadline deadline,
                std::string_view peer);
// Exactly `bytes.size()` bytes; a connection closed before is an error that
// says how many of them came.
Status recv_exact(const Socket& socket, std::span<std::byte> bytes, Deadline deadline,
                  std::string_view peer);
// What has arrived, into bytes[*got..], without waiting: true once all of
// `bytes` is in, false while some is still to come. A connection closed
// before is the same error as recv_exact's.
Result<bool> recv_available(const Socket& socket, std::span<std::byte> bytes, size_t* got,
                            std::string_view peer);

}  // namespace tensorwire::launch
