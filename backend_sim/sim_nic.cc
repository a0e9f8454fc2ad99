#include "backend_sim/sim_nic.h"

#include <limits>
#include <string>
#include <utility>

#include "core/assert.h"

namespace tensorwire::sim {
namespace {
constexpr uint64_t kPageBytes = 4096;
}

SimNic::SimNic(SimContext& context, RcTransport& transport, SimMemorySpace& memory,
               MemoryRegistry& registry, uint32_t rank)
    : context_(context), transport_(transport), memory_(memory), registry_(registry),
      rank_(rank) {
  TW_ASSERT(rank_ < context_.cluster.nodes);
}

Result<uint32_t> SimNic::peer_of(QpHandle qp, const char* call) const {
  if (qp.id == 0 || qp.id > context_.cluster.nodes || qp.id - 1 == rank_) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(call) + ": no queue pair with handle " + std::to_string(qp.id));
  }
  return qp.id - 1;
}

QpState SimNic::queue_pair_state(QpHandle qp) const {
  Result<uint32_t> peer = peer_of(qp, "queue_pair_state");
  return peer.is_ok() ? transport_.state(rank_, *peer) : QpState::kError;
}

Result<MemoryRegion> SimNic::register_memory(const Buffer& buffer, Access access) {
  const Buffer* live = memory_.find(buffer.addr, buffer.length);
  if (live == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "register_memory: the buffer is not inside a live allocation of rank " +
                      std::to_string(rank_));
  }
  if (!is_nic_reachable(live->kind)) {
    return Status(StatusCode::kInvalidArgument,
                  "register_memory: GPU " + std::to_string(live->device) +
                      " memory is not reachable by the NIC (no GPUDirect)");
  }
  if (context_.failing_registrations[rank_] > 0) {
    --context_.failing_registrations[rank_];
    return Status(StatusCode::kOutOfMemory,
                  "register_memory: injected failure on rank " + std::to_string(rank_) +
                      " (ibv_reg_mr could not pin the pages)");
  }
  const uint64_t pages = (buffer.length + kPageBytes - 1) / kPageBytes;
  // Saturates instead of overflowing: a 1 TiB region at an hour per page is a
  // silly but loadable configuration.
  const TimeNs per_page = context_.cluster.registration_per_page_ns;
  const TimeNs base = context_.cluster.registration_base_ns;
  constexpr TimeNs kForever = std::numeric_limits<TimeNs>::max() / 4;
  const TimeNs cost = per_page > 0 && pages > static_cast<uint64_t>((kForever - base) / per_page)
                          ? kForever
                          : base + static_cast<TimeNs>(pages) * per_page;
  TW_ASSERT_MSG(cost >= 0, "validated costs are never negative");
  context_.charge_cpu(rank_, cost, "register memory");
  context_.events.use(SharedObject::memory(rank_, buffer.addr, buffer.length));
  MemoryRegion region = registry_.add(*live == buffer ? buffer : Buffer{buffer.addr, buffer.length,
                                                                        live->kind, live->device},
                                      access);
  TW_ASSERT(region.addr == buffer.addr && region.length == buffer.length);
  context_.stats[rank_].registrations += 1;
  context_.stats[rank_].registered_bytes += buffer.length;
  return region;
}

Status SimNic::deregister_memory(const MemoryRegion& region) {
  // The registry goes with the world (SimContext::tearing_down).
  if (context_.tearing_down) return {};
  context_.events.use(SharedObject::memory(rank_, region.addr, region.length));
  Status st = registry_.remove(region);
  if (st.is_ok()) {
    context_.stats[rank_].deregistrations += 1;
    context_.sanitizer.on_deregister(rank_, region.addr, region.length, context_.now());
  }
  return st;
}

Status SimNic::post_send(QpHandle qp, const SendWorkRequest& wr) {
  Result<uint32_t> peer = peer_of(qp, "post_send");
  if (!peer.is_ok()) return peer.status();
  if (context_.crashed[rank_]) return {StatusCode::kPeerGone, "post_send: this rank crashed"};
  return transport_.post_send(rank_, *peer, wr);
}

Status SimNic::post_recv(QpHandle qp, const RecvWorkRequest& wr) {
  Result<uint32_t> peer = peer_of(qp, "post_recv");
  if (!peer.is_ok()) return peer.status();
  if (context_.crashed[rank_]) return {StatusCode::kPeerGone, "post_recv: this rank crashed"};
  return transport_.post_recv(rank_, *peer, wr);
}

Status SimNic::post_recv_list(QpHandle qp, std::span<const RecvWorkRequest> wrs) {
  Result<uint32_t> peer = peer_of(qp, "post_recv");
  if (!peer.is_ok()) return peer.status();
  if (context_.crashed[rank_]) return {StatusCode::kPeerGone, "post_recv: this rank crashed"};
  return transport_.post_recv_list(rank_, *peer, wrs);
}

void SimNic::set_completion_handler(CompletionHandler handler) {
  transport_.set_handler(rank_, std::move(handler));
}

}  // namespace tensorwire::sim
