// The invariants of a broadcast, checked as it runs. It observes every rank of
// one simulated cluster (CollectiveObserver), so it judges by the cluster's
// truth, not by one rank's view. A checker reads violations() after any event
// (the model checker after every step); the first few violations are kept.
//   - no copy reads bytes of its input that have not landed there;
//   - no producer overwrites ring bytes of an IB buffer that a consumer has not
//     read (every consumer, not just one: Realm's minimum over consumers);
//   - IB memory in use never above its pool;
//   - every IB buffer freed exactly once, and only after its last consumer;
//   - at the end: every IB buffer freed and every destination complete (the
//     runner adds byte-exact content checks with report_destination_mismatch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/protocols/realm_broadcast/collective_observer.h"
#include "core/protocols/realm_broadcast/transfer_graph.h"

namespace tensorwire::collectives {

class BroadcastInvariants final : public CollectiveObserver {
 public:
  explicit BroadcastInvariants(const TransferGraph& graph);

  void on_ib_allocated(uint32_t buffer, uint64_t pool_bytes_in_use, uint64_t pool_bytes) override;
  void on_ib_freed(uint32_t buffer) override;
  void on_chunk_issued(uint32_t copy, uint64_t begin, uint64_t end) override;
  void on_chunk_done(uint32_t copy, uint64_t read) override;
  void on_bytes_landed(uint32_t buffer, uint64_t written) override;
  void on_copy_finished(uint32_t copy) override;
  void on_destination_complete(uint32_t buffer, TimeNs at_ns) override;

  // Once the run has stopped: what must hold when a broadcast has ended.
  void check_at_end();
  // The runner read a destination and its bytes are not the source's.
  void report_destination_mismatch(uint32_t buffer, const std::string& what);

  const std::vector<std::string>& violations() const { return violations_; }
  uint64_t violation_count() const { return violation_count_; }
  bool ok() const { return violation_count_ == 0; }

 private:
  void violate(std::string what);
  uint64_t min_consumer_read(uint32_t buffer) const;

  const TransferGraph& graph_;
  std::vector<uint64_t> landed_;    // by buffer
  std::vector<uint64_t> read_;      // by copy: input read so far
  std::vector<bool> finished_;      // by copy
  std::vector<bool> freed_;         // by buffer
  std::vector<bool> complete_;      // by buffer (destinations)
  std::vector<std::string> violations_;
  uint64_t violation_count_ = 0;
};

}  // namespace tensorwire::collectives
