#include "backend_verbs/rdma_cm_mesh.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "launch/system_call_error.h"

namespace tensorwire::verbs {
namespace {

constexpr int kResolveTimeoutMs = 2000;
constexpr auto kRetryDelay = std::chrono::milliseconds(100);
// RDMA reads in flight per queue pair (and served per queue pair): the
// device's limit, capped so a large HCA does not reserve more than needed.
constexpr uint32_t kMaxReadsInFlight = 16;

// The connect's private data: magic "TWCM", version 1, 0, rank, world size.
constexpr size_t kHelloBytes = 16;
constexpr std::array<uint8_t, 4> kHelloMagic = {'T', 'W', 'C', 'M'};
constexpr uint16_t kHelloVersion = 1;

std::array<uint8_t, kHelloBytes> encode_hello(RankId rank, uint32_t world_size) {
  std::array<uint8_t, kHelloBytes> out{};
  std::memcpy(out.data(), kHelloMagic.data(), kHelloMagic.size());
  out[4] = static_cast<uint8_t>(kHelloVersion >> 8);
  out[5] = static_cast<uint8_t>(kHelloVersion);
  for (int i = 0; i < 4; ++i) {
    out[8 + i] = static_cast<uint8_t>(rank >> (24 - 8 * i));
    out[12 + i] = static_cast<uint8_t>(world_size >> (24 - 8 * i));
  }
  return out;
}

uint32_t get_u32(const std::vector<uint8_t>& in, size_t at) {
  return (uint32_t{in[at]} << 24) | (uint32_t{in[at + 1]} << 16) | (uint32_t{in[at + 2]} << 8) |
         uint32_t{in[at + 3]};
}

std::string address_of(const sockaddr* addr) {
  if (addr == nullptr || addr->sa_family != AF_INET) return "an unknown address";
  sockaddr_in in{};
  std::memcpy(&in, addr, sizeof in);
  return launch::Ipv4Endpoint::from_sockaddr(in).to_string();
}

// IB CM reject reasons worth a word (the rest are reported by number).
std::string reject_reason(int status) {
  switch (status) {
    case 8: return "nobody listens on that port (invalid service ID)";
    case 28: return "refused by the peer (consumer reject)";
    default: return "reject reason " + std::to_string(status);
  }
}

Status set_nonblocking(int fd, const std::string& what) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0) return launch::call_failed("fcntl(F_GETFL, " + what + ")", errno);
  if (fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return launch::call_failed("fcntl(F_SETFL O_NONBLOCK, " + what + ")", errno);
  }
  return {};
}

}  // namespace

// What the loop needs of an event, copied out so the event can be
// acknowledged at once: rdma_destroy_id waits for every event of its id to be
// acknowledged, and the loop destroys ids while handling their events.
struct RdmaCmMesh::EventCopy {
  rdma_cm_event_type type = RDMA_CM_EVENT_ADDR_RESOLVED;
  int status = 0;
  rdma_cm_id* id = nullptr;
  rdma_cm_id* listen_id = nullptr;
  std::vector<uint8_t> private_data;
  uint8_t initiator_depth = 0;
  uint8_t responder_resources = 0;

  std::string describe() const {
    std::string text = rdma_event_str(type);
    if (type == RDMA_CM_EVENT_REJECTED) return text + ": " + reject_reason(status);
    if (status < 0) return text + ": " + launch::errno_text(-status);
    if (status > 0) return text + " (status " + std::to_string(status) + ")";
    return text;
  }
};

Result<std::unique_ptr<RdmaCmMesh>> RdmaCmMesh::bind(const launch::Ipv4Endpoint& local, RankId rank,
                                                     uint32_t world_size) {
  std::unique_ptr<RdmaCmMesh> mesh(new RdmaCmMesh(rank, world_size));
  mesh->channel_ = rdma_create_event_channel();
  if (mesh->channel_ == nullptr) {
    Status st = launch::call_failed(StatusCode::kUnavailable, "rdma_create_event_channel", errno);
    return Status(st.code(),
                  st.message() + " (is /dev/infiniband/rdma_cm there? rdma_ucm loaded?)");
  }
  // The loop polls the channel; rdma_get_cm_event must never block after it.
  if (Status st = set_nonblocking(mesh->channel_->fd, "rdma_cm event channel"); !st.is_ok()) {
    return st;
  }
  if (rdma_create_id(mesh->channel_, &mesh->listener_, nullptr, RDMA_PS_TCP) != 0) {
    mesh->listener_ = nullptr;
    return launch::call_failed("rdma_create_id(listener of rank " + std::to_string(rank) + ")", errno);
  }
  sockaddr_in addr = local.to_sockaddr();
  if (rdma_bind_addr(mesh->listener_, reinterpret_cast<sockaddr*>(&addr)) != 0) {
    return launch::call_failed("rdma_bind_addr(" + local.to_string() + ")", errno);
  }
  mesh->local_ = local;
  mesh->local_.port = ntohs(rdma_get_src_port(mesh->listener_));
  return mesh;
}

RdmaCmMesh::~RdmaCmMesh() {
  close_peers();
  if (listener_ != nullptr && rdma_destroy_id(listener_) != 0) {
    launch::report_teardown_failure("rdma_destroy_id(listener " + local_.to_string() + ")", errno);
  }
  if (channel_ != nullptr) rdma_destroy_event_channel(channel_);
}

Status RdmaCmMesh::listen() {
  // Every higher rank may ask at once.
  const int backlog = static_cast<int>(std::max<uint32_t>(world_size_, 1));
  if (rdma_listen(listener_, backlog) != 0) {
    return launch::call_failed("rdma_listen(" + local_.to_string() + ")", errno);
  }
  return {};
}

std::string RdmaCmMesh::link_name(const Link& link) const {
  std::string name = "rank " + std::to_string(link.peer);
  if (link.peer < peers_.size()) name += " (" + peers_[link.peer].to_string() + ")";
  return name;
}

Status RdmaCmMesh::connect_all(const std::vector<launch::Ipv4Endpoint>& peers, const VerbsDevice& device,
                               const QpShape& shape, const MeshOptions& options) {
  if (peers.size() != world_size_) {
    return Status(StatusCode::kInvalidArgument, "rdma_cm: " + std::to_string(peers.size()) +
                                                    " peer addresses for a world of " +
                                                    std::to_string(world_size_));
  }
  if (!links_.empty()) {
    return Status(StatusCode::kInvalidArgument, "rdma_cm: connect_all called twice");
  }
  peers_ = peers;
  device_ = &device;
  shape_ = shape;
  options_ = options;
  links_.resize(world_size_);
  const launch::Deadline start = launch::SteadyClock::now();
  for (RankId r = 0; r < world_size_; ++r) {
    Link& link = links_[r];
    link.peer = r;
    link.outgoing = r < rank_;
    link.state = r == rank_      ? LinkState::kEstablished
                 : link.outgoing ? LinkState::kIdle
                                 : LinkState::kAwaitingRequest;
    link.retry_at = start;
  }
  const launch::Deadline deadline = start + options.timeout;

  Status result;
  for (;;) {
    const bool all = std::all_of(links_.begin(), links_.end(),
                                 [](const Link& l) { return l.state == LinkState::kEstablished; });
    if (all) break;
    const launch::Deadline now = launch::SteadyClock::now();
    if (now >= deadline) {
      result = Status(StatusCode::kUnavailable,
                      "rdma_cm: rank " + std::to_string(rank_) + " timed out after " +
                          std::to_string(options.timeout.count()) + " ms connecting queue pairs; " +
                          pending_summary());
      break;
    }
    launch::Deadline wake = deadline;
    for (Link& link : links_) {
      if (!link.outgoing || link.state != LinkState::kIdle) continue;
      if (link.retry_at <= now) {
        result = start_outgoing(link, peers_[link.peer]);
        if (!result.is_ok()) break;
      } else {
        wake = std::min(wake, link.retry_at);
      }
    }
    if (!result.is_ok()) break;
    pollfd p{channel_->fd, POLLIN, 0};
    if (poll(&p, 1, launch::milliseconds_until(wake)) < 0 && errno != EINTR) {
      result = launch::call_failed("poll(rdma_cm event channel)", errno);
      break;
    }
    for (;;) {
      EventCopy event;
      bool got = false;
      result = next_event(&event, &got);
      if (!result.is_ok() || !got) break;
      result = handle_setup_event(event);
      if (!result.is_ok()) break;
    }
    if (!result.is_ok()) break;
  }
  device_ = nullptr;
  if (!result.is_ok()) close_peers();
  return result;
}

Status RdmaCmMesh::next_event(EventCopy* copy, bool* got) {
  *got = false;
  rdma_cm_event* event = nullptr;
  if (rdma_get_cm_event(channel_, &event) != 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
    return launch::call_failed("rdma_get_cm_event", errno);
  }
  copy->type = event->event;
  copy->status = event->status;
  copy->id = event->id;
  copy->listen_id = event->listen_id;
  if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
    const rdma_conn_param& conn = event->param.conn;
    if (conn.private_data != nullptr && conn.private_data_len > 0) {
      const auto* bytes = static_cast<const uint8_t*>(conn.private_data);
      copy->private_data.assign(bytes, bytes + conn.private_data_len);
    }
    copy->initiator_depth = conn.initiator_depth;
    copy->responder_resources = conn.responder_resources;
  }
  if (rdma_ack_cm_event(event) != 0) return launch::call_failed("rdma_ack_cm_event", errno);
  *got = true;
  return {};
}

Status RdmaCmMesh::start_outgoing(Link& link, const launch::Ipv4Endpoint& to) {
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(channel_, &id, &link, RDMA_PS_TCP) != 0) {
    return launch::call_failed("rdma_create_id(to " + link_name(link) + ")", errno);
  }
  link.id = id;
  link.state = LinkState::kResolvingAddress;
  // Bound to our own address, so the route leaves through our device.
  sockaddr_in src = local_.to_sockaddr();
  src.sin_port = 0;
  sockaddr_in dst = to.to_sockaddr();
  if (rdma_resolve_addr(id, reinterpret_cast<sockaddr*>(&src), reinterpret_cast<sockaddr*>(&dst),
                        kResolveTimeoutMs) != 0) {
    retry_later(link, launch::call_failed("rdma_resolve_addr(" + to.to_string() + ")", errno).message());
  }
  return {};
}

Status RdmaCmMesh::create_qp(Link& link, rdma_cm_id* id) {
  ibv_qp_init_attr attr{};
  attr.send_cq = device_->completion_queue();
  attr.recv_cq = device_->completion_queue();
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = shape_.send_queue_depth;
  attr.cap.max_recv_wr = shape_.recv_queue_depth;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.cap.max_inline_data = shape_.max_inline_data;
  // Every work request asks for its own completion (IBV_SEND_SIGNALED), so
  // the send queue's occupancy is known exactly.
  attr.sq_sig_all = 0;
  const std::string what = "rdma_create_qp(" + device_->name() + ", RC to " + link_name(link) +
                           ", " + std::to_string(shape_.send_queue_depth) + " send / " +
                           std::to_string(shape_.recv_queue_depth) + " receive work requests)";
  if (rdma_create_qp(id, device_->protection_domain(), &attr) != 0) {
    return launch::call_failed(what, errno);
  }
  if (attr.cap.max_send_wr < shape_.send_queue_depth ||
      attr.cap.max_recv_wr < shape_.recv_queue_depth) {
    return Status(StatusCode::kUnavailable,
                  what + ": granted only " + std::to_string(attr.cap.max_send_wr) + " send / " +
                      std::to_string(attr.cap.max_recv_wr) + " receive work requests");
  }
  link.max_inline_data = std::min(attr.cap.max_inline_data, shape_.max_inline_data);
  return {};
}

void RdmaCmMesh::destroy_link_id(Link& link) {
  if (link.id == nullptr) return;
  if (link.id->qp != nullptr) rdma_destroy_qp(link.id);
  if (rdma_destroy_id(link.id) != 0) {
    launch::report_teardown_failure("rdma_destroy_id(to " + link_name(link) + ")", errno);
  }
  link.id = nullptr;
}

void RdmaCmMesh::retry_later(Link& link, const std::string& why) {
  destroy_link_id(link);
  link.state = LinkState::kIdle;
  link.last_error = why;
  link.attempts += 1;
  link.retry_at = launch::SteadyClock::now() + kRetryDelay;
}

namespace {

rdma_conn_param connection_parameters(const DeviceLimits& limits, const MeshOptions& options) {
  rdma_conn_param param{};
  param.responder_resources =
      static_cast<uint8_t>(std::min(limits.max_qp_rd_atom, kMaxReadsInFlight));
  param.initiator_depth =
      static_cast<uint8_t>(std::min(limits.max_qp_init_rd_atom, kMaxReadsInFlight));
  param.retry_count = std::min<uint8_t>(options.retry_count, 7);
  param.rnr_retry_count = std::min<uint8_t>(options.rnr_retry_count, 7);
  return param;
}

}  // namespace

Status RdmaCmMesh::handle_setup_event(const EventCopy& event) {
  if (event.type == RDMA_CM_EVENT_CONNECT_REQUEST) return handle_connect_request(event);
  if (event.id == listener_) {
    if (event.type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
      return Status(StatusCode::kUnavailable,
                    "rdma_cm: the device of " + local_.to_string() + " was removed");
    }
    return {};
  }
  Link* link = event.id != nullptr ? static_cast<Link*>(event.id->context) : nullptr;
  if (link == nullptr || link->id != event.id) return {};
  switch (event.type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: {
      if (event.id->verbs != device_->context()) {
        const std::string other =
            event.id->verbs != nullptr ? ibv_get_device_name(event.id->verbs->device) : "none";
        return Status(StatusCode::kUnavailable, "rdma_cm: the route to " + link_name(*link) +
                                                    " leaves through device " + other + ", not " +
                                                    device_->name());
      }
      if (Status st = create_qp(*link, event.id); !st.is_ok()) return st;
      if (rdma_resolve_route(event.id, kResolveTimeoutMs) != 0) {
        retry_later(*link, launch::call_failed("rdma_resolve_route", errno).message());
        return {};
      }
      link->state = LinkState::kResolvingRoute;
      return {};
    }
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
      rdma_conn_param param = connection_parameters(device_->limits(), options_);
      const auto hello = encode_hello(rank_, world_size_);
      param.private_data = hello.data();
      param.private_data_len = static_cast<uint8_t>(hello.size());
      if (rdma_connect(event.id, &param) != 0) {
        retry_later(*link, launch::call_failed("rdma_connect", errno).message());
        return {};
      }
      link->state = LinkState::kConnecting;
      return {};
    }
    case RDMA_CM_EVENT_ESTABLISHED: link->state = LinkState::kEstablished; return {};
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_DISCONNECTED:
      if (link->state == LinkState::kEstablished) {
        return Status(StatusCode::kPeerGone, "rdma_cm: " + link_name(*link) +
                                                 " dropped the connection during set-up (" +
                                                 event.describe() + ")");
      }
      if (link->outgoing) {
        retry_later(*link, event.describe());
      } else {
        // The connecting side sees the failure too and tries again.
        destroy_link_id(*link);
        link->state = LinkState::kAwaitingRequest;
        link->last_error = event.describe();
      }
      return {};
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return Status(StatusCode::kUnavailable,
                    "rdma_cm: the device was removed while connecting to " + link_name(*link));
    default: return {};
  }
}

Status RdmaCmMesh::handle_connect_request(const EventCopy& event) {
  rdma_cm_id* id = event.id;
  const std::string from = address_of(rdma_get_peer_addr(id));
  auto refuse = [&](StatusCode code, const std::string& why) {
    if (rdma_reject(id, nullptr, 0) != 0) {
      launch::report_teardown_failure("rdma_reject(request from " + from + ")", errno);
    }
    if (rdma_destroy_id(id) != 0) {
      launch::report_teardown_failure("rdma_destroy_id(request from " + from + ")", errno);
    }
    return Status(code, "rdma_cm: rank " + std::to_string(rank_) +
                            " refused a connection request from " + from + ": " + why);
  };
  const std::vector<uint8_t>& hello = event.private_data;
  if (hello.size() < kHelloBytes ||
      std::memcmp(hello.data(), kHelloMagic.data(), kHelloMagic.size()) != 0) {
    return refuse(StatusCode::kMalformedMessage, "it carries no tensorwire hello (" +
                                                     std::to_string(hello.size()) +
                                                     " bytes of private data)");
  }
  const uint16_t version = static_cast<uint16_t>((hello[4] << 8) | hello[5]);
  if (version != kHelloVersion || hello[6] != 0 || hello[7] != 0) {
    return refuse(StatusCode::kMalformedMessage, "hello version " + std::to_string(version) +
                                                     ", want " + std::to_string(kHelloVersion));
  }
  const RankId peer = get_u32(hello, 8);
  const uint32_t world = get_u32(hello, 12);
  if (world != world_size_) {
    return refuse(StatusCode::kMalformedMessage, "it says the world has " + std::to_string(world) +
                                                     " ranks, not " + std::to_string(world_size_));
  }
  if (peer <= rank_ || peer >= world_size_) {
    return refuse(StatusCode::kMalformedMessage, "it says it is rank " + std::to_string(peer) +
                                                     "; only ranks " + std::to_string(rank_ + 1) +
                                                     ".." + std::to_string(world_size_ - 1) +
                                                     " connect to rank " + std::to_string(rank_));
  }
  if (device_ == nullptr) {
    return refuse(StatusCode::kInvalidArgument, "the queue pairs are already connected");
  }
  Link& link = links_[peer];
  if (link.state == LinkState::kEstablished) {
    return refuse(StatusCode::kMalformedMessage,
                  "rank " + std::to_string(peer) + " is already connected");
  }
  // An earlier attempt of the same peer that failed on its side: replace it.
  destroy_link_id(link);
  id->context = &link;
  link.id = id;
  if (Status st = create_qp(link, id); !st.is_ok()) {
    link.id = nullptr;
    return refuse(st.code(), st.message());
  }
  rdma_conn_param param = connection_parameters(device_->limits(), options_);
  // Serve no more reads than the peer will issue, issue no more than it serves.
  param.responder_resources = std::min(param.responder_resources, event.initiator_depth);
  param.initiator_depth = std::min(param.initiator_depth, event.responder_resources);
  if (rdma_accept(id, &param) != 0) {
    link.last_error = launch::call_failed("rdma_accept", errno).message();
    destroy_link_id(link);
    link.state = LinkState::kAwaitingRequest;
    return {};
  }
  link.state = LinkState::kAccepting;
  return {};
}

std::string RdmaCmMesh::pending_summary() const {
  uint32_t connected = 0;
  std::string missing;
  for (const Link& link : links_) {
    if (link.peer == rank_) continue;
    if (link.state == LinkState::kEstablished) {
      ++connected;
      continue;
    }
    if (!missing.empty()) missing += "; ";
    missing += link_name(link) + ": ";
    switch (link.state) {
      case LinkState::kAwaitingRequest: missing += "no connection request came"; break;
      case LinkState::kAccepting: missing += "accepted, not yet established"; break;
      case LinkState::kResolvingAddress: missing += "resolving its address"; break;
      case LinkState::kResolvingRoute: missing += "resolving the route"; break;
      case LinkState::kConnecting: missing += "connect sent, no answer"; break;
      default: missing += "waiting to retry"; break;
    }
    if (link.attempts > 0) missing += ", " + std::to_string(link.attempts) + " failed attempts";
    if (!link.last_error.empty()) missing += ", last: " + link.last_error;
  }
  return "connected to " + std::to_string(connected) + " of " + std::to_string(world_size_ - 1) +
         " peers; not connected: " + missing;
}

ibv_qp* RdmaCmMesh::qp_to(RankId peer) const {
  if (peer >= links_.size() || links_[peer].id == nullptr) return nullptr;
  return links_[peer].id->qp;
}

uint32_t RdmaCmMesh::max_inline_data_to(RankId peer) const {
  return peer < links_.size() ? links_[peer].max_inline_data : 0;
}

Status RdmaCmMesh::poll_events(std::vector<RankId>* disconnected) {
  for (;;) {
    EventCopy event;
    bool got = false;
    if (Status st = next_event(&event, &got); !st.is_ok()) return st;
    if (!got) return {};
    if (event.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      // Set-up is over: whoever asks now is refused (the error is not ours to
      // raise; the asking side gets REJECTED).
      Status ignored = handle_connect_request(event);
      (void)ignored;
      continue;
    }
    if (event.id == listener_) {
      if (event.type != RDMA_CM_EVENT_DEVICE_REMOVAL) continue;
      for (Link& link : links_) {
        if (link.peer != rank_ && link.state == LinkState::kEstablished) {
          link.state = LinkState::kDisconnected;
          disconnected->push_back(link.peer);
        }
      }
      continue;
    }
    Link* link = event.id != nullptr ? static_cast<Link*>(event.id->context) : nullptr;
    if (link == nullptr || link->id != event.id || link->state != LinkState::kEstablished) {
      continue;
    }
    switch (event.type) {
      case RDMA_CM_EVENT_DISCONNECTED:
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
        link->state = LinkState::kDisconnected;
        disconnected->push_back(link->peer);
        break;
      default: break;
    }
  }
}

Status RdmaCmMesh::disconnect(RankId peer) {
  if (peer >= links_.size() || links_[peer].id == nullptr ||
      links_[peer].state != LinkState::kEstablished) {
    return Status(StatusCode::kInvalidArgument,
                  "rdma_disconnect: no connection to rank " + std::to_string(peer));
  }
  if (rdma_disconnect(links_[peer].id) != 0) {
    return launch::call_failed("rdma_disconnect(" + link_name(links_[peer]) + ")", errno);
  }
  return {};
}

void RdmaCmMesh::close_peers() {
  for (Link& link : links_) {
    if (link.id == nullptr) continue;
    // Tells the peer at once (it sees DISCONNECTED) rather than at its next
    // transport timeout. Failing here is normal for a peer that left first.
    if (link.state == LinkState::kEstablished) (void)rdma_disconnect(link.id);
    destroy_link_id(link);
    link.state = LinkState::kDisconnected;
  }
}

}  // namespace tensorwire::verbs
