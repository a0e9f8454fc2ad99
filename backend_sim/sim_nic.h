// One rank's view of the simulated network: the Nic interface over the shared
// RcTransport, plus memory registration with its CPU cost.
#pragma once

#include "backend_sim/memory_registry.h"
#include "backend_sim/rc_transport.h"
#include "backend_sim/sim_context.h"
#include "backend_sim/sim_memory.h"
#include "core/nic.h"

namespace tensorwire::sim {

class SimNic final : public Nic {
 public:
  SimNic(SimContext& context, RcTransport& transport, SimMemorySpace& memory,
         MemoryRegistry& registry, uint32_t rank);

  RankId rank() const override { return rank_; }
  uint32_t world_size() const override { return context_.cluster.nodes; }
  QpHandle queue_pair_to(RankId peer) const override { return QpHandle{peer + 1}; }
  QpState queue_pair_state(QpHandle qp) const override;
  uint32_t send_queue_depth() const override { return context_.cluster.send_queue_depth; }
  Result<MemoryRegion> register_memory(const Buffer& buffer, Access access) override;
  Status deregister_memory(const MemoryRegion& region) override;
  Status post_send(QpHandle qp, const SendWorkRequest& wr) override;
  Status post_recv(QpHandle qp, const RecvWorkRequest& wr) override;
  Status post_recv_list(QpHandle qp, std::span<const RecvWorkRequest> wrs) override;
  void set_completion_handler(CompletionHandler handler) override;

 private:
  // The peer a handle names, or an error for a handle that names none.
  Result<uint32_t> peer_of(QpHandle qp, const char* call) const;

  SimContext& context_;
  RcTransport& transport_;
  SimMemorySpace& memory_;
  MemoryRegistry& registry_;
  uint32_t rank_;
};

}  // namespace tensorwire::sim
