#include "backend_verbs/tcp_coordinator.h"

#include <utility>

#include "backend_verbs/coordinator_frame.h"

namespace tensorwire::verbs {
namespace {

// Every error leaves here as "coordinator: ..." and names the peer involved:
// socket errors name it already, and so does every check below.
Status coordinator_error(const Status& st) {
  return Status(st.code(), "coordinator: " + st.message());
}
Status coordinator_error(StatusCode code, std::string_view who, const std::string& what) {
  return Status(code, "coordinator: " + std::string(who) + " " + what);
}

// One whole frame: header, then its body; the type must be `want`.
Status read_frame(const Socket& socket, FrameType want, uint32_t max_body, Deadline deadline,
                  std::string_view peer, FrameHeader* header, std::vector<std::byte>* body) {
  std::array<std::byte, kFrameHeaderBytes> head{};
  Status st = recv_exact(socket, head, deadline, peer);
  if (!st.is_ok()) return st;
  Result<FrameHeader> decoded = decode_frame_header(head, max_body);
  if (!decoded.is_ok()) {
    return Status(decoded.status().code(),
                  std::string(peer) + " sent " + decoded.status().message());
  }
  if (decoded->type != want) {
    return Status(StatusCode::kMalformedMessage,
                  std::string(peer) + " sent a " + frame_type_name(decoded->type) +
                      " message where a " + frame_type_name(want) + " message belongs");
  }
  body->assign(decoded->body_bytes, std::byte{0});
  st = recv_exact(socket, *body, deadline, peer);
  if (!st.is_ok()) return st;
  *header = *decoded;
  return {};
}

Status write_frame(const Socket& socket, FrameType type, uint32_t rank,
                   const std::vector<std::byte>& body, Deadline deadline, std::string_view peer) {
  const auto head = encode_frame_header({type, rank, static_cast<uint32_t>(body.size())});
  Status st = send_all(socket, head, deadline, peer);
  if (!st.is_ok()) return st;
  return send_all(socket, body, deadline, peer);
}

}  // namespace

Result<std::unique_ptr<TcpCoordinator>> TcpCoordinator::create(const CoordinatorOptions& options) {
  if (options.world_size == 0 || options.world_size > kMaxCoordinatorWorld) {
    return Status(StatusCode::kInvalidArgument,
                  "coordinator: world size " + std::to_string(options.world_size) +
                      " is outside 1.." + std::to_string(kMaxCoordinatorWorld));
  }
  if (options.rank >= options.world_size) {
    return Status(StatusCode::kInvalidArgument,
                  "coordinator: rank " + std::to_string(options.rank) + " is outside a world of " +
                      std::to_string(options.world_size));
  }
  if (options.timeout.count() <= 0) {
    return Status(StatusCode::kInvalidArgument, "coordinator: the timeout must be positive");
  }
  Result<Ipv4Endpoint> endpoint = resolve_host_port(options.address, "coordinator address");
  if (!endpoint.is_ok()) return endpoint.status();
  std::unique_ptr<TcpCoordinator> c(new TcpCoordinator(options, *endpoint));
  if (options.rank == 0) {
    Result<Socket> listener = listen_tcp(*endpoint, static_cast<int>(options.world_size));
    if (!listener.is_ok()) return coordinator_error(listener.status());
    Result<uint16_t> port = local_port(*listener);
    if (!port.is_ok()) return coordinator_error(port.status());
    c->listener_ = std::move(*listener);
    c->endpoint_.port = *port;
  }
  return c;
}

TcpCoordinator::TcpCoordinator(const CoordinatorOptions& options, Ipv4Endpoint endpoint)
    : rank_(options.rank),
      world_size_(options.world_size),
      timeout_(options.timeout),
      endpoint_(endpoint),
      root_name_("the coordinator (rank 0 at " + endpoint.to_string() + ")") {}

Deadline TcpCoordinator::deadline() const { return SteadyClock::now() + timeout_; }

Status TcpCoordinator::fail(Status error) {
  if (broken_.is_ok()) broken_ = error;
  // Closing tells the other side at once instead of at its timeout.
  members_.clear();
  to_root_ = Socket();
  listener_ = Socket();
  return error;
}

void TcpCoordinator::abort(const Status& why) {
  (void)fail(why.is_ok() ? Status(StatusCode::kAborted, "aborted") : why);
}

Status TcpCoordinator::usable(std::string_view call) const {
  if (!broken_.is_ok()) {
    return Status(StatusCode::kAborted,
                  std::string(call) + ": the coordinator failed earlier: " + broken_.message());
  }
  return {};
}

Status TcpCoordinator::join() {
  if (Status st = usable("join"); !st.is_ok()) return st;
  if (joined_) return Status(StatusCode::kInvalidArgument, "coordinator: join called twice");
  Status st = rank_ == 0 ? join_as_root(deadline()) : join_as_member(deadline());
  if (!st.is_ok()) return fail(st);
  joined_ = true;
  return {};
}

Status TcpCoordinator::join_as_root(Deadline deadline) {
  members_.resize(world_size_);
  for (uint32_t joined = 1; joined < world_size_;) {
    std::string address;
    Result<Socket> s =
        accept_before(listener_, deadline, &address,
                      "ranks to join the coordinator (" + std::to_string(joined - 1) + " of " +
                          std::to_string(world_size_ - 1) + " joined)");
    if (!s.is_ok()) return coordinator_error(s.status());
    const std::string peer = "peer " + address;
    FrameHeader header;
    std::vector<std::byte> body;
    Status st = read_frame(*s, FrameType::kHello, max_body_bytes(FrameType::kHello, world_size_),
                           deadline, peer, &header, &body);
    if (!st.is_ok()) return coordinator_error(st);
    Result<uint32_t> world = decode_hello_body(body);
    if (!world.is_ok()) {
      return coordinator_error(StatusCode::kMalformedMessage, peer,
                               "sent " + world.status().message());
    }
    if (*world != world_size_) {
      return coordinator_error(StatusCode::kMalformedMessage, peer,
                               "says the world has " + std::to_string(*world) +
                                   " ranks; this coordinator was started for " +
                                   std::to_string(world_size_));
    }
    if (header.rank == 0 || header.rank >= world_size_) {
      return coordinator_error(StatusCode::kMalformedMessage, peer,
                               "says it is rank " + std::to_string(header.rank) + ", outside 1.." +
                                   std::to_string(world_size_ - 1));
    }
    if (members_[header.rank].socket.is_open()) {
      return coordinator_error(StatusCode::kMalformedMessage, peer,
                               "says it is rank " + std::to_string(header.rank) + ", which " +
                                   members_[header.rank].name + " already is");
    }
    members_[header.rank] =
        Peer{std::move(*s), "rank " + std::to_string(header.rank) + " (" + address + ")"};
    ++joined;
  }
  // Nobody else may join: a late stranger gets "connection refused".
  listener_ = Socket();
  return {};
}

Status TcpCoordinator::join_as_member(Deadline deadline) {
  Result<Socket> s = connect_before(endpoint_, deadline, "the coordinator (rank 0)");
  if (!s.is_ok()) return coordinator_error(s.status());
  to_root_ = std::move(*s);
  Status st = write_frame(to_root_, FrameType::kHello, rank_, encode_hello_body(world_size_),
                          deadline, root_name_);
  if (!st.is_ok()) return coordinator_error(st);
  return {};
}

Result<std::vector<std::string>> TcpCoordinator::all_gather(std::string_view mine) {
  return exchange(mine, "all_gather", timeout_);
}

Status TcpCoordinator::barrier() { return exchange("", "barrier", timeout_).status(); }

Status TcpCoordinator::barrier(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    return Status(StatusCode::kInvalidArgument, "coordinator: the barrier's timeout must be positive");
  }
  return exchange("", "barrier", timeout).status();
}

Result<std::vector<std::string>> TcpCoordinator::exchange(std::string_view mine,
                                                          std::string_view what,
                                                          std::chrono::milliseconds timeout) {
  if (Status st = usable(what); !st.is_ok()) return st;
  if (!joined_) {
    return Status(StatusCode::kInvalidArgument,
                  "coordinator: " + std::string(what) + " before join");
  }
  if (mine.size() > kMaxGatherEntryBytes) {
    return Status(StatusCode::kInvalidArgument,
                  "coordinator: " + std::string(what) + " of " + std::to_string(mine.size()) +
                      " bytes exceeds the " + std::to_string(kMaxGatherEntryBytes) + " allowed");
  }
  const uint32_t sequence = ++sequence_;
  const Deadline deadline = SteadyClock::now() + timeout;
  Result<std::vector<std::string>> all = rank_ == 0
                                             ? exchange_as_root(mine, sequence, deadline)
                                             : exchange_as_member(mine, sequence, deadline);
  if (!all.is_ok()) {
    const Status& st = all.status();
    return fail(Status(st.code(), st.message() + " (during " + std::string(what) + ")"));
  }
  return all;
}

Result<std::vector<std::string>> TcpCoordinator::exchange_as_root(std::string_view mine,
                                                                  uint32_t sequence,
                                                                  Deadline deadline) {
  std::vector<std::string> entries(world_size_);
  entries[0] = std::string(mine);
  for (uint32_t r = 1; r < world_size_; ++r) {
    const Peer& peer = members_[r];
    FrameHeader header;
    std::vector<std::byte> body;
    Status st =
        read_frame(peer.socket, FrameType::kGather, max_body_bytes(FrameType::kGather, world_size_),
                   deadline, peer.name, &header, &body);
    if (!st.is_ok()) return coordinator_error(st);
    if (header.rank != r) {
      return coordinator_error(StatusCode::kMalformedMessage, peer.name,
                               "signed its message as rank " + std::to_string(header.rank));
    }
    Result<GatherContribution> c = decode_gather_body(body);
    if (!c.is_ok()) {
      return coordinator_error(StatusCode::kMalformedMessage, peer.name,
                               "sent " + c.status().message());
    }
    if (c->sequence != sequence) {
      return coordinator_error(StatusCode::kMalformedMessage, peer.name,
                               "is at exchange " + std::to_string(c->sequence) +
                                   ", rank 0 at exchange " + std::to_string(sequence));
    }
    entries[r] = std::move(c->bytes);
  }
  const std::vector<std::byte> result = encode_gather_result_body(sequence, entries);
  for (uint32_t r = 1; r < world_size_; ++r) {
    Status st = write_frame(members_[r].socket, FrameType::kGatherResult, 0, result, deadline,
                            members_[r].name);
    if (!st.is_ok()) return coordinator_error(st);
  }
  return entries;
}

Result<std::vector<std::string>> TcpCoordinator::exchange_as_member(std::string_view mine,
                                                                    uint32_t sequence,
                                                                    Deadline deadline) {
  Status st = write_frame(to_root_, FrameType::kGather, rank_, encode_gather_body(sequence, mine),
                          deadline, root_name_);
  if (!st.is_ok()) return coordinator_error(st);
  FrameHeader header;
  std::vector<std::byte> body;
  st = read_frame(to_root_, FrameType::kGatherResult,
                  max_body_bytes(FrameType::kGatherResult, world_size_), deadline, root_name_,
                  &header, &body);
  if (!st.is_ok()) return coordinator_error(st);
  if (header.rank != 0) {
    return coordinator_error(StatusCode::kMalformedMessage, root_name_,
                             "signed its message as rank " + std::to_string(header.rank));
  }
  Result<std::vector<std::string>> entries = decode_gather_result_body(body, sequence, world_size_);
  if (!entries.is_ok()) {
    return coordinator_error(StatusCode::kMalformedMessage, root_name_,
                             "sent " + entries.status().message());
  }
  return entries;
}

}  // namespace tensorwire::verbs
