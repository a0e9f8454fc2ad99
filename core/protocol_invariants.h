// A protocol's own invariants, watched while the model checker (or a
// simulated run) executes: what only this protocol knows must hold, on top of
// the harness's checks (content, completions, liveness). The simulator
// reports what the hardware did; the invariants record what they forbid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/nic.h"

namespace tensorwire {

class ProtocolInvariants {
 public:
  virtual ~ProtocolInvariants() = default;

  // An RDMA write (with its immediate, where it carried one) landed in
  // `target`'s memory at [addr, addr + length).
  virtual void on_remote_write_landed(RankId target, uint64_t addr, uint64_t length, bool has_imm,
                                      uint32_t imm) = 0;

  // What was broken, one line each, in the order it was seen.
  virtual const std::vector<std::string>& violations() const = 0;
};

}  // namespace tensorwire
