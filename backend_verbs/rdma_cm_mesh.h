// Reliable-connected queue pairs from one rank to every other, set up with
// librdmacm: the contract's "QPs are connected to every peer before the
// protocol starts".
//
// Convention: every rank listens on its own rdma_cm address (bind() then
// listen(); port 0 lets the kernel pick, and the ranks learn each other's
// ports through the bootstrap coordinator). For each pair i < j, rank j
// connects to rank i and rank i accepts. All of a rank's connections go
// through one rdma_cm event channel and one event loop, so a rank accepts
// from higher ranks while it connects to lower ones and no order of start-up
// can deadlock. A connect that fails because the peer is not ready
// (REJECTED, UNREACHABLE, ADDR/ROUTE/CONNECT_ERROR) is retried until the
// timeout; the error then names each peer not connected and why.
//
// The connecting side carries a 16-byte hello in the connect's private data
// (magic "TWCM", version, its rank, the world size); the accepting side
// checks it and refuses, with an error naming the address it came from, a
// request that is not from a rank of this world that should connect to it.
//
// The queue pairs use the protection domain and completion queue of a
// VerbsDevice attached to this mesh's context (the listener's ->verbs after
// rdma_bind_addr), which must be the context of every cm_id: rdma_create_qp
// refuses a PD of another context.
#pragma once

#include <rdma/rdma_cma.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "launch/bounded_socket_io.h"
#include "launch/ipv4_endpoint.h"
#include "backend_verbs/verbs_device.h"
#include "core/nic.h"
#include "core/status.h"

namespace tensorwire::verbs {

struct QpShape {
  uint32_t send_queue_depth = 256;
  uint32_t recv_queue_depth = 4096;
  uint32_t max_inline_data = 0;
};

struct MeshOptions {
  // Transport retries before RETRY_EXC_ERR (at most 7).
  uint8_t retry_count = 7;
  // Receiver-not-ready retries before RNR_RETRY_EXC_ERR; 7 means forever, as
  // in verbs (and the simulator's default).
  uint8_t rnr_retry_count = 7;
  // Bound on connect_all as a whole.
  std::chrono::milliseconds timeout{30'000};
};

class RdmaCmMesh {
 public:
  // Creates the event channel and a listener bound to `local`. The listener's
  // context() is the device that owns that address (null when none does).
  static Result<std::unique_ptr<RdmaCmMesh>> bind(const launch::Ipv4Endpoint& local, RankId rank,
                                                  uint32_t world_size);
  ~RdmaCmMesh();
  RdmaCmMesh(const RdmaCmMesh&) = delete;
  RdmaCmMesh& operator=(const RdmaCmMesh&) = delete;

  ibv_context* context() const { return listener_->verbs; }
  // The address peers connect to ("A.B.C.D:PORT" with the port bound).
  launch::Ipv4Endpoint endpoint() const { return local_; }

  Status listen();

  // Connects a queue pair to every other rank; `peers[r]` is rank r's
  // endpoint (this rank's own entry is ignored). On failure every queue pair
  // made so far is destroyed again.
  Status connect_all(const std::vector<launch::Ipv4Endpoint>& peers, const VerbsDevice& device,
                     const QpShape& shape, const MeshOptions& options);

  ibv_qp* qp_to(RankId peer) const;
  // Inline bytes the queue pair to `peer` accepts (what rdma_create_qp granted).
  uint32_t max_inline_data_to(RankId peer) const;

  // After connect_all, from the progress loop: reads rdma_cm events without
  // blocking and appends to *disconnected each peer whose connection dropped.
  Status poll_events(std::vector<RankId>* disconnected);

  // Disconnects from `peer` (rdma_disconnect), keeping its queue pair: the
  // peer sees DISCONNECTED, and so does this rank's poll_events.
  Status disconnect(RankId peer);

  // Disconnects and destroys every peer's queue pair and cm_id. Must run
  // before the VerbsDevice whose PD and CQ they use is destroyed.
  void close_peers();

 private:
  enum class LinkState : uint8_t {
    kIdle,              // outgoing, waiting for its (next) attempt
    kResolvingAddress,  // outgoing
    kResolvingRoute,    // outgoing
    kConnecting,        // outgoing, rdma_connect sent
    kAwaitingRequest,   // incoming, no request yet
    kAccepting,         // incoming, rdma_accept sent
    kEstablished,
    kDisconnected,
  };
  struct Link {
    RankId peer = 0;
    bool outgoing = false;
    LinkState state = LinkState::kIdle;
    rdma_cm_id* id = nullptr;
    uint32_t max_inline_data = 0;
    uint32_t attempts = 0;
    launch::Deadline retry_at{};
    std::string last_error;
  };
  struct EventCopy;

  RdmaCmMesh(RankId rank, uint32_t world_size) : rank_(rank), world_size_(world_size) {}
  Status start_outgoing(Link& link, const launch::Ipv4Endpoint& to);
  Status handle_setup_event(const EventCopy& event);
  Status handle_connect_request(const EventCopy& event);
  Status create_qp(Link& link, rdma_cm_id* id);
  void retry_later(Link& link, const std::string& why);
  void destroy_link_id(Link& link);
  Status next_event(EventCopy* event, bool* got);
  std::string link_name(const Link& link) const;
  std::string pending_summary() const;

  RankId rank_;
  uint32_t world_size_;
  launch::Ipv4Endpoint local_;
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* listener_ = nullptr;
  std::vector<Link> links_;  // index = peer rank; sized once (cm_ids point into it)
  std::vector<launch::Ipv4Endpoint> peers_;
  // Set for the duration of connect_all.
  const VerbsDevice* device_ = nullptr;
  QpShape shape_;
  MeshOptions options_;
};

}  // namespace tensorwire::verbs
