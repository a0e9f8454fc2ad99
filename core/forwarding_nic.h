// A Nic that passes every call on to another. The base of decorators that
// watch what goes through a NIC (core/counting_nic.h counts it,
// core/tracing_nic.h traces it): each overrides only the calls it
// looks at and hands the rest on unchanged, so a call added to Nic needs one
// forwarding method here instead of one per decorator.
#pragma once

#include <utility>

#include "core/nic.h"

namespace tensorwire {

class ForwardingNic : public Nic {
 public:
  // `inner` is not owned and outlives this.
  explicit ForwardingNic(Nic& inner) : inner_(inner) {}

  RankId rank() const override { return inner_.rank(); }
  uint32_t world_size() const override { return inner_.world_size(); }
  QpHandle queue_pair_to(RankId peer) const override { return inner_.queue_pair_to(peer); }
  QpState queue_pair_state(QpHandle qp) const override { return inner_.queue_pair_state(qp); }
  uint32_t send_queue_depth() const override { return inner_.send_queue_depth(); }
  Result<MemoryRegion> register_memory(const Buffer& buffer, Access access) override {
    return inner_.register_memory(buffer, access);
  }
  Status deregister_memory(const MemoryRegion& region) override {
    return inner_.deregister_memory(region);
  }
  Status post_send(QpHandle qp, const SendWorkRequest& wr) override {
    return inner_.post_send(qp, wr);
  }
  Status post_recv(QpHandle qp, const RecvWorkRequest& wr) override {
    return inner_.post_recv(qp, wr);
  }
  void set_completion_handler(CompletionHandler handler) override {
    inner_.set_completion_handler(std::move(handler));
  }

 protected:
  Nic& inner() const { return inner_; }

 private:
  Nic& inner_;
};

}  // namespace tensorwire
