#include "backend_verbs/verbs_nic_factory.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "launch/ipv4_endpoint.h"
#include "backend_verbs/rdma_cm_mesh.h"
#include "backend_verbs/verbs_device.h"

namespace tensorwire::verbs {
namespace {

Status in_rank(RankId rank, const Status& st) {
  return Status(st.code(), "rank " + std::to_string(rank) + ": " + st.message());
}

// The options that can be judged before any device is touched.
Status check_options(const VerbsNicOptions& options) {
  if (options.device_name.empty()) {
    return Status(StatusCode::kInvalidArgument, "no RDMA device name given");
  }
  if (options.send_queue_depth == 0 || options.recv_queue_depth == 0) {
    return Status(StatusCode::kInvalidArgument,
                  "queue depths must be at least 1 (send " +
                      std::to_string(options.send_queue_depth) + ", receive " +
                      std::to_string(options.recv_queue_depth) + ")");
  }
  return {};
}

// 1. The device, named plainly when it is not there; 2. the listener, bound
// to the address, whose context must be that device's.
Result<std::unique_ptr<RdmaCmMesh>> bind_listener(const VerbsNicOptions& options,
                                                  const in_addr& address, RankId rank,
                                                  uint32_t world) {
  if (Status st = VerbsDevice::check_openable(options.device_name); !st.is_ok()) return st;
  Result<std::unique_ptr<RdmaCmMesh>> mesh =
      RdmaCmMesh::bind(launch::Ipv4Endpoint{address, options.listen_port}, rank, world);
  if (!mesh.is_ok()) return mesh.status();
  ibv_context* context = (*mesh)->context();
  if (context == nullptr) {
    return Status(StatusCode::kUnavailable,
                  options.address + " is not the address of an RDMA device "
                                    "(rdma_bind_addr found no device behind it)");
  }
  const std::string bound_device = ibv_get_device_name(context->device);
  if (bound_device != options.device_name) {
    return Status(StatusCode::kInvalidArgument, "address " + options.address +
                                                    " belongs to RDMA device " + bound_device +
                                                    ", not " + options.device_name);
  }
  return mesh;
}

// 3. PD and CQ on that context. The CQ holds every work request all the
// queue pairs can have outstanding (clamped to the device's max_cqe; the
// NIC refuses work beyond what it holds).
Result<std::unique_ptr<VerbsDevice>> attach_device(const VerbsNicOptions& options,
                                                   ibv_context* context, uint32_t world) {
  const uint64_t per_peer = uint64_t{options.send_queue_depth} + options.recv_queue_depth;
  const uint64_t wanted_cqe = std::max<uint64_t>(per_peer * (world - 1), 1);
  VerbsDeviceOptions device_options;
  device_options.completion_queue_entries =
      static_cast<uint32_t>(std::min<uint64_t>(wanted_cqe, UINT32_MAX));
  device_options.use_completion_channel = options.use_completion_channel;
  device_options.wanted_inline_bytes = options.max_inline_bytes;
  Result<std::unique_ptr<VerbsDevice>> device = VerbsDevice::attach(context, device_options);
  if (!device.is_ok()) return device.status();
  const DeviceLimits& limits = (*device)->limits();
  if (options.send_queue_depth > limits.max_qp_wr || options.recv_queue_depth > limits.max_qp_wr) {
    return Status(StatusCode::kInvalidArgument,
                  "queue depths (send " + std::to_string(options.send_queue_depth) +
                      ", receive " + std::to_string(options.recv_queue_depth) + ") exceed " +
                      options.device_name + "'s max_qp_wr of " +
                      std::to_string(limits.max_qp_wr));
  }
  return device;
}

// Every rank's rdma_cm address, as the all-gather brought them (peer input).
Result<std::vector<launch::Ipv4Endpoint>> parse_peer_endpoints(const std::vector<std::string>& gathered,
                                                       uint32_t world) {
  std::vector<launch::Ipv4Endpoint> peers;
  for (RankId r = 0; r < world; ++r) {
    Result<launch::Ipv4Endpoint> peer =
        launch::parse_ipv4_endpoint(gathered[r], "rank " + std::to_string(r) + "'s rdma_cm address");
    if (!peer.is_ok()) return Status(StatusCode::kMalformedMessage, peer.status().message());
    peers.push_back(*peer);
  }
  return peers;
}

}  // namespace

Result<std::unique_ptr<VerbsNic>> connect_verbs_nic(const VerbsNicOptions& options,
                                                    launch::TcpCoordinator& coordinator) {
  const RankId rank = coordinator.rank();
  const uint32_t world = coordinator.world_size();
  // Joined first, so that a rank failing below can tell the others at once
  // (abort closes its connections) instead of leaving them to time out.
  if (Status st = coordinator.join(); !st.is_ok()) return in_rank(rank, st);
  auto failed = [&](const Status& st) {
    const Status error = in_rank(rank, st);
    coordinator.abort(error);
    return error;
  };
  if (Status st = check_options(options); !st.is_ok()) return failed(st);
  Result<in_addr> address = launch::parse_ipv4_address(options.address, "RDMA address");
  if (!address.is_ok()) return failed(address.status());
  Result<std::unique_ptr<RdmaCmMesh>> mesh = bind_listener(options, *address, rank, world);
  if (!mesh.is_ok()) return failed(mesh.status());
  Result<std::unique_ptr<VerbsDevice>> device =
      attach_device(options, (*mesh)->context(), world);
  if (!device.is_ok()) return failed(device.status());

  // 4. Listen, then learn everyone's address: every listener is up before
  // anyone connects.
  if (Status st = (*mesh)->listen(); !st.is_ok()) return failed(st);
  Result<std::vector<std::string>> gathered =
      coordinator.all_gather((*mesh)->endpoint().to_string());
  if (!gathered.is_ok()) return in_rank(rank, gathered.status());
  Result<std::vector<launch::Ipv4Endpoint>> peers = parse_peer_endpoints(*gathered, world);
  if (!peers.is_ok()) return failed(peers.status());

  // 5. The mesh.
  QpShape shape;
  shape.send_queue_depth = options.send_queue_depth;
  shape.recv_queue_depth = options.recv_queue_depth;
  shape.max_inline_data = (*device)->limits().max_inline_data;
  MeshOptions mesh_options;
  mesh_options.retry_count = options.retry_count;
  mesh_options.rnr_retry_count = options.rnr_retry_count;
  mesh_options.timeout = options.connect_timeout;
  if (Status st = (*mesh)->connect_all(*peers, **device, shape, mesh_options); !st.is_ok()) {
    return failed(st);
  }
  auto nic = std::make_unique<VerbsNic>(std::move(*device), std::move(*mesh), shape, rank, world);
  nic->inject_qp_error_after_posts(options.qp_error_after_posts);

  // 6. Nobody starts before everyone is connected.
  if (Status st = coordinator.barrier(); !st.is_ok()) return in_rank(rank, st);
  return nic;
}

Result<VerbsRank> connect_verbs_rank(const VerbsNicOptions& options,
                                     const launch::CoordinatorOptions& coordinator_options) {
  Result<std::unique_ptr<launch::TcpCoordinator>> coordinator = launch::TcpCoordinator::create(coordinator_options);
  if (!coordinator.is_ok()) {
    return in_rank(coordinator_options.rank, coordinator.status());
  }
  Result<std::unique_ptr<VerbsNic>> nic = connect_verbs_nic(options, **coordinator);
  if (!nic.is_ok()) return nic.status();
  return VerbsRank{std::move(*coordinator), std::move(*nic)};
}

}  // namespace tensorwire::verbs
