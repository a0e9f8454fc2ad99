// From (device, address, rank, world, coordinator) to a VerbsNic whose queue
// pairs are connected to every peer: what a rank does before its protocol
// starts.
//
//   0. join the coordinator (a rank that fails below aborts it, so the
//      others fail at once rather than at their timeouts);
//   1. check the device exists (the error lists the devices there are);
//   2. bind an rdma_cm listener to the address, and check the address belongs
//      to that device;
//   3. make the PD and CQ on the listener's device context;
//   4. listen, then all-gather every rank's "A.B.C.D:PORT" through the
//      coordinator (so every listener is up before anyone connects);
//   5. connect the mesh (rdma_cm_mesh.h);
//   6. a coordinator barrier: every rank's queue pairs are connected.
//
// Each step is bounded in time; the first that fails is the Status returned.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "launch/tcp_coordinator.h"
#include "backend_verbs/verbs_nic.h"
#include "core/status.h"

namespace tensorwire::verbs {

struct VerbsNicOptions {
  std::string device_name;  // "rxe0"
  std::string address;      // this rank's IPv4 address on that device, "10.77.0.1"
  // rdma_cm port to listen on; 0 lets the kernel pick a free one (the peers
  // learn it through the coordinator, so several ranks can share an address).
  uint16_t listen_port = 0;
  uint32_t send_queue_depth = 256;   // as the simulator's default
  uint32_t recv_queue_depth = 4096;  // a control ring of the largest size the loader accepts
  uint32_t max_inline_bytes = 256;   // asked for; the device may grant less
  bool use_completion_channel = false;
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;  // 7: retry forever, as the simulator's default
  // Bound on connecting the queue pairs (the coordinator has its own).
  std::chrono::milliseconds connect_timeout{30'000};
  // Fault injection for tests: the queue pair of the Nth send-side work
  // request goes to the error state after it is posted
  // (VerbsNic::inject_qp_error_after_posts). 0: never.
  uint64_t qp_error_after_posts = 0;
};

// `coordinator` has been created for this rank (its rank and world size are
// this NIC's); join() is called here. It stays usable for later barriers.
Result<std::unique_ptr<VerbsNic>> connect_verbs_nic(const VerbsNicOptions& options,
                                                    launch::TcpCoordinator& coordinator);

// The same, with a coordinator made from `coordinator_options` and handed back.
struct VerbsRank {
  std::unique_ptr<launch::TcpCoordinator> coordinator;
  std::unique_ptr<VerbsNic> nic;
};
Result<VerbsRank> connect_verbs_rank(const VerbsNicOptions& options,
                                     const launch::CoordinatorOptions& coordinator_options);

}  // namespace tensorwire::verbs
