// A Nic that forwards to another and counts what went through it: the
// transport counters a run reports (the simulator counts the same things in
// its TransportStats). Bytes are counted when a post is accepted, since verbs report
// no byte count for a sender's completion; a post later flushed by an error
// is still counted. RDMA reads count the bytes they asked for.
#pragma once

#include <cstdint>

#include "core/forwarding_nic.h"

namespace tensorwire {

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

class CountingNic final : public ForwardingNic {
 public:
  explicit CountingNic(Nic& inner) : ForwardingNic(inner) {}

  Result<MemoryRegion> register_memory(const Buffer& buffer, Access access) override;
  Status deregister_memory(const MemoryRegion& region) override;
  Status post_send(QpHandle qp, const SendWorkRequest& wr) override;
  void set_completion_handler(CompletionHandler handler) override;

  const TransportCounters& counters() const { return counters_; }

 private:
  TransportCounters counters_;
};

}  // namespace tensorwire
