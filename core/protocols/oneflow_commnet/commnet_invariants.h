// What the model checker checks of CommNet beside the harness's own checks,
// from what every rank reports as it happens (commnet_audit.h), with all
// ranks in view:
//   - a READ_DONE is sent, and a token released on one, only when no read of
//     that token is in flight (the sender may reuse the memory they read);
//   - a read stays inside the range its token was registered for, by the rank
//     that registered it, for the reader, while it is registered;
//   - every Recv's callback runs at most once (the harness sees it ran);
//   - the receive pool never shrinks: after each message is handled, all of
//     a live channel's receives are posted again;
//   - CommNet never writes remote memory.
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/protocol_invariants.h"
#include "core/protocols/oneflow_commnet/commnet_rendezvous.h"

namespace tensorwire::oneflow {

class CommNetInvariants final : public ProtocolInvariants, public AuditSink {
 public:
  // Has every rank in `ranks` (index = rank) report to it; it must outlive
  // their work (the checker keeps it past the run).
  explicit CommNetInvariants(const std::vector<const CommNetRendezvous*>& ranks);

  void on_remote_write_landed(RankId target, uint64_t addr, uint64_t length, bool has_imm,
                              uint32_t imm) override;
  void on_audit(RankId rank, const AuditEvent& event) override;
  const std::vector<std::string>& violations() const override { return violations_; }

 private:
  using TokenKey = std::tuple<RankId, RankId, uint32_t>;  // (sender, reader, token)
  struct Range {
    uint64_t addr = 0;
    uint64_t length = 0;
  };
  void read_posted(RankId reader, const AuditEvent& e);
  void token_let_go(RankId rank, const TokenKey& key, const char* what);

  std::map<TokenKey, Range> registered_;
  std::map<TokenKey, uint64_t> reads_in_flight_;
  std::set<std::pair<RankId, uint32_t>> callbacks_;  // (rank, Recv serial)
  std::vector<std::string> violations_;
};

}  // namespace tensorwire::oneflow
