// The zero-copy protocol's own invariant for the model checker: a content
// write lands inside the destination of the outstanding request its
// immediate (the request_index) names: not at a stale address after a
// re-request, not in a freed proxy, not for a request that does not exist.
#pragma once

#include <string>
#include <vector>

#include "core/protocol_invariants.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_rendezvous.h"

namespace tensorwire::tf_verbs {

class TfVerbsInvariants final : public ProtocolInvariants {
 public:
  // ranks[r] is rank r's instance; none is owned.
  explicit TfVerbsInvariants(std::vector<const RdmaRendezvous*> ranks);

  void on_remote_write_landed(RankId target, uint64_t addr, uint64_t length, bool has_imm,
                              uint32_t imm) override;
  const std::vector<std::string>& violations() const override { return violations_; }

 private:
  std::vector<const RdmaRendezvous*> ranks_;
  std::vector<std::string> violations_;
};

}  // namespace tensorwire::tf_verbs
