#include "launch/bounded_socket_io.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <thread>

#include "launch/system_call_error.h"

namespace tensorwire::launch {
namespace {

Status timed_out(std::string_view what) {
  return Status(StatusCode::kUnavailable, "timed out " + std::string(what));
}

Status set_nonblocking(int fd, std::string_view what) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0) return call_failed("fcntl(F_GETFL, " + std::string(what) + ")", errno);
  if (fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return call_failed("fcntl(F_SETFL O_NONBLOCK, " + std::string(what) + ")", errno);
  }
  return {};
}

// Waits for `events` on fd. kOk with *ready false means the deadline passed.
Status wait_for(int fd, short events, Deadline deadline, bool* ready, std::string_view what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, milliseconds_until(deadline));
    if (n < 0) {
      if (errno == EINTR) continue;
      return call_failed("poll(" + std::string(what) + ")", errno);
    }
    *ready = n > 0;
    return {};
  }
}

Result<Socket> new_tcp_socket(std::string_view what) {
  Socket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.is_open()) return call_failed("socket(AF_INET, " + std::string(what) + ")", errno);
  Status st = set_nonblocking(s.fd(), what);
  if (!st.is_ok()) return st;
  // Coordinator messages are small and each waits for an answer: no Nagle delay.
  const int one = 1;
  if (setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    return call_failed("setsockopt(TCP_NODELAY, " + std::string(what) + ")", errno);
  }
  return s;
}

}  // namespace

int milliseconds_until(Deadline deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
  if (left.count() <= 0) return 0;
  if (left.count() > INT_MAX) return INT_MAX;
  return static_cast<int>(left.count());
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) close(fd_);
}

int Socket::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

Result<Socket> listen_tcp(const Ipv4Endpoint& at, int backlog) {
  const std::string where = at.to_string();
  Result<Socket> s = new_tcp_socket("listen on " + where);
  if (!s.is_ok()) return s.status();
  // A coordinator restarted on the same port must not wait out TIME_WAIT.
  const int one = 1;
  if (setsockopt(s->fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    return call_failed("setsockopt(SO_REUSEADDR, " + where + ")", errno);
  }
  const sockaddr_in addr = at.to_sockaddr();
  if (bind(s->fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return call_failed("bind(" + where + ")", errno);
  }
  if (listen(s->fd(), backlog) != 0) return call_failed("listen(" + where + ")", errno);
  return s;
}

Result<uint16_t> local_port(const Socket& socket) {
  sockaddr_in addr{};
  socklen_t length = sizeof addr;
  if (getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    return call_failed("getsockname", errno);
  }
  return ntohs(addr.sin_port);
}

Result<Socket> accept_before(const Socket& listener, Deadline deadline, std::string* peer,
                             std::string_view waiting_for) {
  for (;;) {
    bool ready = false;
    Status st = wait_for(listener.fd(), POLLIN, deadline, &ready, "accept");
    if (!st.is_ok()) return st;
    if (!ready) return timed_out("waiting for " + std::string(waiting_for));
    sockaddr_in addr{};
    socklen_t length = sizeof addr;
    Socket s(accept4(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &length,
                     SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!s.is_open()) {
      // The connection went away between poll and accept: wait for the next.
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED || errno == EINTR) {
        continue;
      }
      return call_failed("accept4", errno);
    }
    const int one = 1;
    if (setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
      return call_failed("setsockopt(TCP_NODELAY, accepted)", errno);
    }
    if (peer != nullptr) *peer = Ipv4Endpoint::from_sockaddr(addr).to_string();
    return s;
  }
}

Result<Socket> connect_before(const Ipv4Endpoint& to, Deadline deadline, std::string_view what) {
  const std::string where = to.to_string();
  int last_error = 0;
  for (;;) {
    Result<Socket> s = new_tcp_socket("connect to " + where);
    if (!s.is_ok()) return s.status();
    const sockaddr_in addr = to.to_sockaddr();
    int error = 0;
    if (connect(s->fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      error = errno;
      if (error == EINPROGRESS) {
        bool ready = false;
        Status st = wait_for(s->fd(), POLLOUT, deadline, &ready, "connect");
        if (!st.is_ok()) return st;
        if (!ready) {
          return timed_out("connecting to " + std::string(what) + " at " + where);
        }
        socklen_t length = sizeof error;
        if (getsockopt(s->fd(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
          return call_failed("getsockopt(SO_ERROR, " + where + ")", errno);
        }
      }
    }
    if (error == 0) return s;
    last_error = error;
    // Nobody listens yet (or the backlog is full): the coordinator may still
    // be starting. Anything else is not going to get better.
    if (error != ECONNREFUSED && error != EAGAIN && error != ETIMEDOUT) {
      return call_failed("connect(" + std::string(what) + " at " + where + ")", error);
    }
    if (SteadyClock::now() + std::chrono::milliseconds(50) >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status(StatusCode::kUnavailable, "timed out connecting to " + std::string(what) + " at " +
                                              where + " (last attempt: " + errno_text(last_error) +
                                              ")");
}

Status send_all(const Socket& socket, std::span<const std::byte> bytes, Deadline deadline,
                std::string_view peer) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(socket.fd(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return call_failed("send(to " + std::string(peer) + ")", errno);
    }
    bool ready = false;
    Status st = wait_for(socket.fd(), POLLOUT, deadline, &ready, "send");
    if (!st.is_ok()) return st;
    if (!ready) {
      return timed_out("sending to " + std::string(peer) + " (" + std::to_string(sent) + " of " +
                       std::to_string(bytes.size()) + " bytes sent)");
    }
  }
  return {};
}

Status fail_when_silent(const Socket& socket, std::chrono::milliseconds silence,
                        std::string_view peer) {
  const int seconds = static_cast<int>(
      std::clamp<int64_t>(std::chrono::ceil<std::chrono::seconds>(silence).count(), 1, 86400));
  const int idle = std::max(1, seconds / 2);
  const int count = 3;
  const int interval = std::max(1, (seconds - idle) / count);
  const unsigned int user_timeout_ms = static_cast<unsigned int>(seconds) * 1000U;
  const int one = 1;
  struct Option {
    int level;
    int name;
    const void* value;
    socklen_t size;
    const char* text;
  };
  for (const Option& o : {Option{SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one, "SO_KEEPALIVE"},
                          Option{IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle, "TCP_KEEPIDLE"},
                          Option{IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval,
                                 "TCP_KEEPINTVL"},
                          Option{IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count, "TCP_KEEPCNT"},
                          Option{IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
                                 sizeof user_timeout_ms, "TCP_USER_TIMEOUT"}}) {
    if (setsockopt(socket.fd(), o.level, o.name, o.value, o.size) != 0) {
      return call_failed("setsockopt(" + std::string(o.text) + ", " + std::string(peer) + ")",
                         errno);
    }
  }
  return {};
}

bool send_now(const Socket& socket, std::span<const std::byte> bytes) {
  const ssize_t n = send(socket.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return n == static_cast<ssize_t>(bytes.size());
}

Result<bool> recv_available(const Socket& socket, std::span<std::byte> bytes, size_t* got,
                            std::string_view peer) {
  while (*got < bytes.size()) {
    const ssize_t n = recv(socket.fd(), bytes.data() + *got, bytes.size() - *got, 0);
    if (n > 0) {
      *got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      return Status(StatusCode::kPeerGone, std::string(peer) + " closed the connection after " +
                                               std::to_string(*got) + " of " +
                                               std::to_string(bytes.size()) + " bytes");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    return call_failed("recv(from " + std::string(peer) + ")", errno);
  }
  return true;
}

Status recv_exact(const Socket& socket, std::span<std::byte> bytes, Deadline deadline,
                  std::string_view peer) {
  size_t got = 0;
  for (;;) {
    Result<bool> complete = recv_available(socket, bytes, &got, peer);
    if (!complete.is_ok()) return complete.status();
    if (*complete) return {};
    bool ready = false;
    Status st = wait_for(socket.fd(), POLLIN, deadline, &ready, "recv");
    if (!st.is_ok()) return st;
    if (!ready) {
      return timed_out("waiting for " + std::string(peer) + " (" + std::to_string(got) + " of " +
                       std::to_string(bytes.size()) + " bytes received)");
    }
  }
}

}  // namespace tensorwire::launch
