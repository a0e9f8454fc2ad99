#include "core/protocols/tf_verbs_zero_copy/tf_verbs_invariants.h"

#include <optional>
#include <utility>

#include "core/assert.h"

namespace tensorwire::tf_verbs {

TfVerbsInvariants::TfVerbsInvariants(std::vector<const RdmaRendezvous*> ranks)
    : ranks_(std::move(ranks)) {
  for (const RdmaRendezvous* r : ranks_) TW_ASSERT(r != nullptr);
}

void TfVerbsInvariants::on_remote_write_landed(RankId target, uint64_t addr, uint64_t length,
                                               bool has_imm, uint32_t imm) {
  // A zero-length write carries no content (dead and empty tensors).
  if (target >= ranks_.size() || length == 0) return;
  const std::string where = "invariant: rank " + std::to_string(target) + ": a write of " +
                            std::to_string(length) + " bytes";
  if (!has_imm) {
    violations_.push_back(where + " without immediate (no request to complete)");
    return;
  }
  std::optional<Buffer> dest = ranks_[target]->destination_of(imm);
  if (!dest) {
    violations_.push_back(where + " for request_index " + std::to_string(imm) +
                          ", which names no outstanding request");
  } else if (!dest->contains(addr, length)) {
    violations_.push_back(where + " for request_index " + std::to_string(imm) +
                          " lands outside that request's destination");
  }
}

}  // namespace tensorwire::tf_verbs
