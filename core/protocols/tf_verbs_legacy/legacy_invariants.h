// What the model checker checks of the legacy protocol beside the harness's
// own checks, from what every rank reports (legacy_audit.h) and every RDMA
// write that lands:
//   - a message buffer (and an ACK buffer) is never rewritten before its
//     owner has parsed it and sent the ACK (resp. handled the ACK);
//   - a tensor buffer (header slot or content) is never written while its
//     receiver still reads it: between a write landing and BUFFER_IDLE;
//   - every write lands inside a buffer its owner gave that peer;
//   - one message in flight per direction per message buffer: none is posted
//     before the previous one's ACK came back;
//   - every Recv's callback runs at most once (the harness sees it ran).
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/protocol_invariants.h"
#include "core/protocols/tf_verbs_legacy/legacy_rendezvous.h"

namespace tensorwire::tf_legacy {

class LegacyInvariants final : public ProtocolInvariants, public AuditSink {
 public:
  // Has every rank in `ranks` (index = rank) report to it; it must outlive
  // their work (the checker keeps it past the run).
  explicit LegacyInvariants(const std::vector<const LegacyRendezvous*>& ranks);

  void on_remote_write_landed(RankId target, uint64_t addr, uint64_t length, bool has_imm,
                              uint32_t imm) override;
  void on_audit(RankId rank, const AuditEvent& event) override;
  const std::vector<std::string>& violations() const override { return violations_; }

 private:
  struct Region {
    uint64_t end = 0;
    RxBufferKind kind = RxBufferKind::kMessage;
    RankId peer = 0;
    std::string name;
    bool full = false;  // written, not yet given back
  };
  Region* region_at(RankId rank, uint64_t addr, uint64_t length);
  Region* fixed_region(RankId rank, RankId peer, RxBufferKind kind);
  void violation(std::string line);

  std::vector<std::map<uint64_t, Region>> regions_;  // by rank, by start address
  std::set<std::pair<RankId, RankId>> messages_in_flight_;  // (writer, peer)
  std::set<std::pair<RankId, uint32_t>> callbacks_;         // (rank, Recv serial)
  std::vector<std::string> violations_;
};

}  // namespace tensorwire::tf_legacy
