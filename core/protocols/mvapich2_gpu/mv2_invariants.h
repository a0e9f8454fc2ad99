// What the model checker checks of MVAPICH2-GPU beside the harness's own
// checks (content, every Recv done, liveness, the DMA sanitizer), from what
// every rank reports as it happens (mv2_audit.h) and the writes the simulated
// hardware landed:
//   - a vbuf is never overwritten before it is free: the sender copies into a
//     staging range only with no RDMA write from it in flight, and a write
//     lands in the receiver only inside a range a CTS offered and not since
//     landed in without being copied out;
//   - no write before its CTS: every write posted targets the range the
//     receiver offered for that block;
//   - exactly one FIN per block, after the block's write completed;
//   - the user's buffer is released only with no write from it in flight and,
//     on success, after the last block's FIN.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/protocol_invariants.h"
#include "core/protocols/mvapich2_gpu/mv2_rendezvous.h"

namespace tensorwire::mvapich2 {

class Mv2Invariants final : public ProtocolInvariants, public AuditSink {
 public:
  // Has every rank in `ranks` (index = rank) report to it; it must outlive
  // their work (the checker keeps it past the run).
  explicit Mv2Invariants(const std::vector<const Mv2Rendezvous*>& ranks);

  void on_remote_write_landed(RankId target, uint64_t addr, uint64_t length, bool has_imm,
                              uint32_t imm) override;
  void on_audit(RankId rank, const AuditEvent& event) override;
  const std::vector<std::string>& violations() const override { return violations_; }

 private:
  using BlockKey = std::tuple<RankId, RankId, uint32_t, uint32_t>;  // (sender, receiver, transfer, block)
  struct Offer {
    uint64_t addr = 0;
    uint64_t length = 0;
    bool landed = false;
  };
  struct Write {
    uint64_t addr = 0;  // the sender's source range
    uint64_t length = 0;
  };
  void write_posted(RankId sender, const AuditEvent& e);
  void write_completed(RankId sender, const AuditEvent& e);
  void fin_sent(RankId sender, const AuditEvent& e);
  void staging_filled(RankId sender, const AuditEvent& e);
  void released(RankId sender, const AuditEvent& e);
  void violation(RankId rank, const std::string& what);

  std::map<BlockKey, Offer> offers_;
  std::map<BlockKey, Write> writes_in_flight_;
  std::map<BlockKey, bool> written_;  // completed writes: true when successful
  std::map<BlockKey, uint32_t> fins_;
  std::vector<std::string> violations_;
};

}  // namespace tensorwire::mvapich2
