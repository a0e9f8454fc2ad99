#include "launch/tcp_coordinator.h"

#include <poll.h>
#include <sys/socket.h>

#include <optional>
#include <span>
#include <utility>

#include "launch/coordinator_frame.h"
#include "launch/system_call_error.h"

namespace tensorwire::launch {
namespace {

// Every error leaves here as "coordinator: ..." and names the peer involved:
// socket errors name it already, and so does every check below.
Status coordinator_error(const Status& st) {
  return Status(st.code(), "coordinator: " + st.message());
}
Status coordinator_error(StatusCode code, std::string_view who, const std::string& what) {
  return Status(code, "coordinator: " + std::string(who) + " " + what);
}

// A frame's header, checked: its magic and layout, a body of at most
// max_body bytes, and the type `want`.
Result<FrameHeader> check_frame_header(std::span<const std::byte, kFrameHeaderBytes> head,
                                       FrameType want, uint32_t max_body, std::string_view peer) {
  Result<FrameHeader> decoded = decode_frame_header(head, max_body);
  if (!decoded.is_ok()) {
    return Status(decoded.status().code(),
                  std::string(peer) + " sent " + decoded.status().message());
  }
  // An abort may come in place of any message; its reader reports it.
  if (decoded->type != want && decoded->type != FrameType::kAbort) {
    return Status(StatusCode::kMalformedMessage,
                  std::string(peer) + " sent a " + frame_type_name(decoded->type) +
                      " message where a " + frame_type_name(want) + " message belongs");
  }
  return decoded;
}

// A whole abort message from `peer`: the error that ends the exchange.
Status peer_gave_up(std::string_view peer, std::span<const std::byte> body) {
  Result<std::string> why = decode_abort_body(body);
  if (!why.is_ok()) {
    return Status(StatusCode::kMalformedMessage,
                  std::string(peer) + " sent " + why.status().message());
  }
  return Status(StatusCode::kAborted, std::string(peer) + " gave up: " + *why);
}

// Rank r's connection ended without an abort: the process is gone (its
// kernel closed the socket) or its host went silent. Other errors name the
// peer as they are.
Status peer_error(RankId r, const Status& st) {
  if (st.code() != StatusCode::kPeerGone) return coordinator_error(st);
  return Status(StatusCode::kPeerGone, "rank " + std::to_string(r) + " lost: " + st.message());
}

// One whole frame: header, then its body; the type must be `want` (or an
// abort, which is the error it carries).
Status read_frame(const Socket& socket, FrameType want, uint32_t max_body, Deadline deadline,
                  std::string_view peer, FrameHeader* header, std::vector<std::byte>* body) {
  std::array<std::byte, kFrameHeaderBytes> head{};
  Status st = recv_exact(socket, head, deadline, peer);
  if (!st.is_ok()) return st;
  Result<FrameHeader> checked = check_frame_header(head, want, max_body, peer);
  if (!checked.is_ok()) return checked.status();
  body->assign(checked->body_bytes, std::byte{0});
  st = recv_exact(socket, *body, deadline, peer);
  if (!st.is_ok()) return st;
  if (checked->type == FrameType::kAbort) return peer_gave_up(peer, *body);
  *header = *checked;
  return {};
}

// The same frame read piece by piece, as its bytes arrive, never waiting.
class FrameReader {
 public:
  FrameReader(FrameType want, uint32_t max_body) : want_(want), max_body_(max_body) {}

  // True once the whole frame is in.
  Result<bool> poll(const Socket& socket, std::string_view peer) {
    if (!header_) {
      Result<bool> in = recv_available(socket, head_, &head_got_, peer);
      if (!in.is_ok() || !*in) return in;
      Result<FrameHeader> checked = check_frame_header(head_, want_, max_body_, peer);
      if (!checked.is_ok()) return checked.status();
      header_ = *checked;
      body_.assign(header_->body_bytes, std::byte{0});
    }
    Result<bool> in = recv_available(socket, body_, &body_got_, peer);
    if (in.is_ok() && *in && header_->type == FrameType::kAbort) return peer_gave_up(peer, body_);
    return in;
  }
  const FrameHeader& header() const { return *header_; }
  const std::vector<std::byte>& body() const { return body_; }
  size_t received() const { return head_got_ + body_got_; }
  size_t expected() const { return kFrameHeaderBytes + body_.size(); }

 private:
  FrameType want_;
  uint32_t max_body_;
  std::array<std::byte, kFrameHeaderBytes> head_{};
  size_t head_got_ = 0;
  std::optional<FrameHeader> header_;
  std::vector<std::byte> body_;
  size_t body_got_ = 0;
};

// A barrier's arrival carries no bytes; one that does comes from a rank that
// is out of step (in an all-gather).
Status barrier_carries_nothing(const std::string& bytes, std::string_view peer) {
  if (bytes.empty()) return {};
  return coordinator_error(StatusCode::kMalformedMessage, peer,
                           "sent " + std::to_string(bytes.size()) +
                               " bytes for a barrier, which carries none");
}

// Rank r's contribution to exchange `sequence`, from its gather frame.
Result<std::string> accept_gather(const FrameHeader& header, std::span<const std::byte> body,
                                  uint32_t r, uint32_t sequence, std::string_view peer) {
  if (header.rank != r) {
    return coordinator_error(StatusCode::kMalformedMessage, peer,
                             "signed its message as rank " + std::to_string(header.rank));
  }
  Result<GatherContribution> c = decode_gather_body(body);
  if (!c.is_ok()) {
    return coordinator_error(StatusCode::kMalformedMessage, peer,
                             "sent " + c.status().message());
  }
  if (c->sequence != sequence) {
    return coordinator_error(StatusCode::kMalformedMessage, peer,
                             "is at exchange " + std::to_string(c->sequence) +
                                 ", rank 0 at exchange " + std::to_string(sequence));
  }
  return std::move(c->bytes);
}

// Every rank's bytes of exchange `sequence`, from rank 0's answer.
Result<std::vector<std::string>> accept_gather_result(const FrameHeader& header,
                                                      std::span<const std::byte> body,
                                                      uint32_t sequence, uint32_t world_size,
                                                      std::string_view root) {
  if (header.rank != 0) {
    return coordinator_error(StatusCode::kMalformedMessage, root,
                             "signed its message as rank " + std::to_string(header.rank));
  }
  Result<std::vector<std::string>> entries = decode_gather_result_body(body, sequence, world_size);
  if (!entries.is_ok()) {
    return coordinator_error(StatusCode::kMalformedMessage, root,
                             "sent " + entries.status().message());
  }
  return entries;
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
  if (options.timeout.count() <= 0 || options.peer_timeout.count() <= 0) {
    return Status(StatusCode::kInvalidArgument, "coordinator: the timeouts must be positive");
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
      peer_timeout_(options.peer_timeout),
      endpoint_(endpoint),
      root_name_("the coordinator (rank 0 at " + endpoint.to_string() + ")") {}

Deadline TcpCoordinator::deadline() const { return SteadyClock::now() + timeout_; }

Status TcpCoordinator::fail(Status error) {
  if (broken_.is_ok()) {
    broken_ = error;
    tell_the_others(error);
  }
  // A pending barrier ends with the coordinator (its readers name sockets
  // about to close); poll_barrier now answers the error.
  pending_.reset();
  // Closing tells the other side at once instead of at its timeout.
  members_.clear();
  to_root_ = Socket();
  listener_ = Socket();
  return error;
}

void TcpCoordinator::abort(const Status& why) {
  (void)fail(why.is_ok() ? Status(StatusCode::kAborted, "aborted") : why);
}

// A last word to every connection before they close, so the others can tell
// a rank that gave up (and why) from one that was lost, and rank 0 passes on
// which rank was lost. A message cut short by this failure can only be on the
// connection that failed, whose peer learns nothing more anyway.
void TcpCoordinator::tell_the_others(const Status& why) {
  if (!joined_) return;
  const std::vector<std::byte> body = encode_abort_body(why.message());
  const auto head =
      encode_frame_header({FrameType::kAbort, rank_, static_cast<uint32_t>(body.size())});
  std::vector<std::byte> message(head.begin(), head.end());
  message.insert(message.end(), body.begin(), body.end());
  for (RankId r = rank_ == 0 ? 1 : 0; r < (rank_ == 0 ? world_size_ : 1); ++r) {
    // Best effort: a connection that cannot take it at once is closed anyway.
    if (connection_to(r).is_open()) (void)send_now(connection_to(r), message);
  }
}

Status TcpCoordinator::usable(std::string_view call) const {
  if (!broken_.is_ok()) {
    return Status(StatusCode::kAborted,
                  std::string(call) + ": the coordinator failed earlier: " + broken_.message());
  }
  return {};
}

Status TcpCoordinator::may_start(std::string_view what) const {
  if (Status st = usable(what); !st.is_ok()) return st;
  if (!joined_) {
    return Status(StatusCode::kInvalidArgument,
                  "coordinator: " + std::string(what) + " before join");
  }
  if (pending_) {
    return Status(StatusCode::kInvalidArgument,
                  "coordinator: " + std::string(what) + " while a barrier is pending");
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
    st = fail_when_silent(members_[header.rank].socket, peer_timeout_, members_[header.rank].name);
    if (!st.is_ok()) return coordinator_error(st);
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
  if (Status st = fail_when_silent(to_root_, peer_timeout_, root_name_); !st.is_ok()) {
    return coordinator_error(st);
  }
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
  if (Status st = may_start(what); !st.is_ok()) return st;
  if (mine.size() > kMaxGatherEntryBytes) {
    return Status(StatusCode::kInvalidArgument,
                  "coordinator: " + std::string(what) + " of " + std::to_string(mine.size()) +
                      " bytes exceeds the " + std::to_string(kMaxGatherEntryBytes) + " allowed");
  }
  const uint32_t sequence = ++sequence_;
  const Deadline deadline = SteadyClock::now() + timeout;
  Result<std::vector<std::string>> all = rank_ == 0
                                             ? exchange_as_root(mine, sequence, deadline,
                                                                what == "barrier")
                                             : exchange_as_member(mine, sequence, deadline);
  if (!all.is_ok()) {
    const Status& st = all.status();
    return fail(Status(st.code(), st.message() + " (during " + std::string(what) + ")"));
  }
  return all;
}

Result<std::vector<std::string>> TcpCoordinator::exchange_as_root(std::string_view mine,
                                                                  uint32_t sequence,
                                                                  Deadline deadline,
                                                                  bool barrier) {
  std::vector<std::string> entries(world_size_);
  entries[0] = std::string(mine);
  for (uint32_t r = 1; r < world_size_; ++r) {
    const Peer& peer = members_[r];
    FrameHeader header;
    std::vector<std::byte> body;
    Status st =
        read_frame(peer.socket, FrameType::kGather, max_body_bytes(FrameType::kGather, world_size_),
                   deadline, peer.name, &header, &body);
    if (!st.is_ok()) return connection_failed(r, st);
    Result<std::string> bytes = accept_gather(header, body, r, sequence, peer.name);
    if (!bytes.is_ok()) return bytes.status();
    if (barrier) {
      if (Status st = barrier_carries_nothing(*bytes, peer.name); !st.is_ok()) return st;
    }
    entries[r] = std::move(*bytes);
  }
  const std::vector<std::byte> result = encode_gather_result_body(sequence, entries);
  for (uint32_t r = 1; r < world_size_; ++r) {
    Status st = write_frame(members_[r].socket, FrameType::kGatherResult, 0, result, deadline,
                            members_[r].name);
    if (!st.is_ok()) return connection_failed(r, st);
  }
  return entries;
}

Result<std::vector<std::string>> TcpCoordinator::exchange_as_member(std::string_view mine,
                                                                    uint32_t sequence,
                                                                    Deadline deadline) {
  Status st = write_frame(to_root_, FrameType::kGather, rank_, encode_gather_body(sequence, mine),
                          deadline, root_name_);
  if (!st.is_ok()) return connection_failed(0, st);
  FrameHeader header;
  std::vector<std::byte> body;
  st = read_frame(to_root_, FrameType::kGatherResult,
                  max_body_bytes(FrameType::kGatherResult, world_size_), deadline, root_name_,
                  &header, &body);
  if (!st.is_ok()) return connection_failed(0, st);
  return accept_gather_result(header, body, sequence, world_size_, root_name_);
}

// A barrier in flight: rank 0 reads one gather frame from each other rank (an
// empty one) and then answers them all; another rank has sent its frame and
// reads rank 0's answer. readers[r] reads rank r's frame on rank 0 (entry 0
// unused); on another rank readers[0] reads rank 0's answer.
struct TcpCoordinator::PendingBarrier {
  uint32_t sequence = 0;
  Deadline deadline;
  std::vector<std::optional<FrameReader>> readers;
};

TcpCoordinator::~TcpCoordinator() = default;

Status TcpCoordinator::start_barrier(std::chrono::milliseconds timeout) {
  if (Status st = may_start("barrier"); !st.is_ok()) return st;
  if (timeout.count() <= 0) {
    return Status(StatusCode::kInvalidArgument, "coordinator: the barrier's timeout must be positive");
  }
  auto pending = std::make_unique<PendingBarrier>();
  pending->sequence = ++sequence_;
  pending->deadline = SteadyClock::now() + timeout;
  pending->readers.resize(rank_ == 0 ? world_size_ : 1);
  if (rank_ == 0) {
    const uint32_t max_body = max_body_bytes(FrameType::kGather, world_size_);
    for (uint32_t r = 1; r < world_size_; ++r) pending->readers[r].emplace(FrameType::kGather, max_body);
  } else {
    // Sixteen header bytes and four of sequence into an idle socket: the send
    // finishes at once, the deadline only bounds a broken connection.
    Status st = write_frame(to_root_, FrameType::kGather, rank_,
                            encode_gather_body(pending->sequence, ""), pending->deadline,
                            root_name_);
    if (!st.is_ok()) {
      const Status error = connection_failed(0, st);
      return fail(Status(error.code(), error.message() + " (during barrier)"));
    }
    pending->readers[0].emplace(FrameType::kGatherResult,
                                max_body_bytes(FrameType::kGatherResult, world_size_));
  }
  pending_ = std::move(pending);
  return {};
}

std::optional<Status> TcpCoordinator::poll_barrier() {
  // First: a barrier that an abort() ended answers why.
  if (Status st = usable("barrier"); !st.is_ok()) return st;
  if (!pending_) return Status(StatusCode::kInvalidArgument, "coordinator: no barrier is pending");
  Result<bool> ended = rank_ == 0 ? poll_barrier_as_root() : poll_barrier_as_member();
  if (ended.is_ok() && !*ended && SteadyClock::now() >= pending_->deadline) {
    // Name the first rank still missing, as the blocking barrier would.
    for (size_t r = 0; r < pending_->readers.size(); ++r) {
      if (!pending_->readers[r]) continue;
      const FrameReader& reader = *pending_->readers[r];
      const std::string& who = rank_ == 0 ? members_[r].name : root_name_;
      ended = Status(StatusCode::kUnavailable,
                     "coordinator: timed out waiting for " + who + " (" +
                         std::to_string(reader.received()) + " of " +
                         std::to_string(reader.expected()) + " bytes received)");
      break;
    }
  }
  if (!ended.is_ok()) {
    pending_.reset();
    const Status& st = ended.status();
    return fail(Status(st.code(), st.message() + " (during barrier)"));
  }
  if (!*ended) return std::nullopt;
  pending_.reset();
  return Status();
}

std::vector<int> TcpCoordinator::barrier_fds() const {
  std::vector<int> fds;
  if (!pending_) return fds;
  for (size_t r = 0; r < pending_->readers.size(); ++r) {
    if (!pending_->readers[r]) continue;
    const Socket& socket = rank_ == 0 ? members_[r].socket : to_root_;
    if (socket.is_open()) fds.push_back(socket.fd());
  }
  return fds;
}

// Readers are reset once their frame is in and accepted.
Result<bool> TcpCoordinator::poll_barrier_as_root() {
  bool all_in = true;
  for (uint32_t r = 1; r < world_size_; ++r) {
    std::optional<FrameReader>& reader = pending_->readers[r];
    if (!reader) continue;
    const Peer& peer = members_[r];
    Result<bool> in = reader->poll(peer.socket, peer.name);
    if (!in.is_ok()) return connection_failed(r, in.status());
    if (!*in) {
      all_in = false;
      continue;
    }
    Result<std::string> bytes =
        accept_gather(reader->header(), reader->body(), r, pending_->sequence, peer.name);
    if (!bytes.is_ok()) return bytes.status();
    if (Status st = barrier_carries_nothing(*bytes, peer.name); !st.is_ok()) return st;
    reader.reset();
  }
  if (!all_in) return false;
  const std::vector<std::byte> result =
      encode_gather_result_body(pending_->sequence, std::vector<std::string>(world_size_));
  for (uint32_t r = 1; r < world_size_; ++r) {
    Status st = write_frame(members_[r].socket, FrameType::kGatherResult, 0, result,
                            pending_->deadline, members_[r].name);
    if (!st.is_ok()) return connection_failed(r, st);
  }
  return true;
}

Result<bool> TcpCoordinator::poll_barrier_as_member() {
  std::optional<FrameReader>& reader = pending_->readers[0];
  Result<bool> in = reader->poll(to_root_, root_name_);
  if (!in.is_ok()) return connection_failed(0, in.status());
  if (!*in) return false;
  Result<std::vector<std::string>> entries = accept_gather_result(
      reader->header(), reader->body(), pending_->sequence, world_size_, root_name_);
  if (!entries.is_ok()) return entries.status();
  return true;
}

// Rank r's connection failed as `st` says. When it was closed, an abort it
// carried first (a send that found the connection closed leaves it unread)
// is the better reason: the peer gave up, and says why.
Status TcpCoordinator::connection_failed(RankId r, const Status& st) {
  if (st.code() == StatusCode::kPeerGone) {
    Status queued = ended_connection(r);
    if (queued.code() == StatusCode::kAborted) return queued;
  }
  return peer_error(r, st);
}

Status TcpCoordinator::watch_peers() {
  // The first error as it was: it names the lost rank, if one was.
  if (!broken_.is_ok()) return broken_;
  if (!joined_) return {};
  std::vector<pollfd> fds;
  std::vector<RankId> ranks;
  for (RankId r = rank_ == 0 ? 1 : 0; r < (rank_ == 0 ? world_size_ : 1); ++r) {
    const size_t reader = rank_ == 0 ? r : 0;
    if (pending_ && pending_->readers[reader]) continue;  // the barrier reads it
    if (!connection_to(r).is_open()) continue;
    // POLLRDHUP: the peer closed even when bytes it sent before are unread.
    fds.push_back(pollfd{connection_to(r).fd(), POLLRDHUP, 0});
    ranks.push_back(r);
  }
  if (fds.empty()) return {};
  if (poll(fds.data(), fds.size(), 0) < 0 && errno != EINTR) {
    return fail(call_failed("poll(coordinator connections)", errno));
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    if ((fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      return fail(ended_connection(ranks[i]));
    }
  }
  return {};
}

// The connection ended, so all it carried is here: frames of an exchange this
// rank has not reached yet (skipped), maybe an abort, then the end.
Status TcpCoordinator::ended_connection(RankId r) {
  const Socket& socket = connection_to(r);
  const std::string& name = name_of(r);
  const auto lost = [r](const std::string& why) {
    return Status(StatusCode::kPeerGone, "rank " + std::to_string(r) + " lost: " + why);
  };
  const Deadline deadline = SteadyClock::now() + std::chrono::milliseconds(100);
  for (int frames = 0; frames < 4; ++frames) {
    std::byte probe{};
    const ssize_t n = recv(socket.fd(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) {
      return lost(name + " closed its coordinator connection without a word (its process ended)");
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      // ETIMEDOUT: its host stopped answering (fail_when_silent).
      return lost(call_failed("recv(from " + name + ")", errno).message());
    }
    std::array<std::byte, kFrameHeaderBytes> head{};
    if (Status st = recv_exact(socket, head, deadline, name); !st.is_ok()) {
      return lost(st.message());
    }
    Result<FrameHeader> header =
        decode_frame_header(head, max_body_bytes(FrameType::kGatherResult, world_size_));
    if (!header.is_ok()) {
      return coordinator_error(header.status().code(), name, "sent " + header.status().message());
    }
    std::vector<std::byte> body(header->body_bytes);
    if (Status st = recv_exact(socket, body, deadline, name); !st.is_ok()) {
      return lost(st.message());
    }
    if (header->type == FrameType::kAbort) return coordinator_error(peer_gave_up(name, body));
  }
  return lost(name + " closed its coordinator connection");
}

}  // namespace tensorwire::launch
