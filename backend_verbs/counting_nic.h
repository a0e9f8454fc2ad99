// A Nic that forwards to another and counts what went through it: the
// transport counters a run reports (the simulator counts the same things in
// its SimStats). Bytes are counted when a post is accepted, since verbs report
// no byte count for a sender's completion; a post later flushed by an error
// is still counted. RDMA reads count the bytes they asked for.
#pragma once

#include <cstdint>

#include "core/nic.h"

namespace tensorwire::verbs {

struct TransportCounters {
  uint64_t bytes_posted = 0;  // sends, writes and writes with immediate (payload bytes)
  uint64_t sends = 0;
  uint64_t rdma_writes = 0;
  uint64_t rdma_writes_with_imm = 0;
  uint64_t rdma_reads = 0;
  uint64_t rdma_read_bytes = 0;
  uint64_t registrations = 0;
  uint64_t registered_bytes = 0;
  uint64_t deregistrations = 0;
  uint64_t completions_error = 0;
};

class CountingNic final : public Nic {
 public:
  explicit CountingNic(Nic& inner) : inner_(inner) {}

  RankId rank() const override { return inner_.rank(); }
  uint32_t world_size() const override { return inner_.world_size(); }
  QpHandle queue_pair_to(RankId peer) const override { return inner_.queue_pair_to(peer); }
  QpState queue_pair_state(QpHandle qp) const override { return inner_.queue_pair_state(qp); }
  uint32_t send_queue_depth() const override { return inner_.send_queue_depth(); }
  Result<MemoryRegion> register_memory(const Buffer& buffer, Access access) override;
  Status deregister_memory(const MemoryRegion& region) override;
  Status post_send(QpHandle qp, const SendWorkRequest& wr) override;
  Status post_recv(QpHandle qp, const RecvWorkRequest& wr) override {
    return inner_.post_recv(qp, wr);
  }
  void set_completion_handler(CompletionHandler handler) override;

  const TransportCounters& counters() const { return counters_; }

 private:
  Nic& inner_;
  TransportCounters counters_;
};

}  // namespace tensorwire::verbs
