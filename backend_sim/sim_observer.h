// Hooks for tests and the model checker to watch the simulated hardware
// without changing it. Every method has an empty default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/nic.h"

namespace tensorwire::sim {

class SimObserver {
 public:
  virtual ~SimObserver() = default;
  // An RDMA write (with or without immediate) has placed `length` bytes at
  // `addr` in rank `target`'s memory; called before the target's completion.
  virtual void on_remote_write_landed(RankId /*target*/, uint64_t /*addr*/, uint64_t /*length*/,
                                      bool /*has_imm*/, uint32_t /*imm*/) {}
  // A completion is about to be handed to rank `rank`'s progress loop.
  virtual void on_completion(RankId /*rank*/, const Completion& /*completion*/) {}
  // The NIC of `rank` put work request `wr_id` to `peer` on the wire, having
  // read `bytes` from the rank's memory (empty: a read request, or no payload).
  virtual void on_request_started(RankId /*rank*/, RankId /*peer*/, uint64_t /*wr_id*/,
                                  std::span<const std::byte> /*bytes*/) {}
};

}  // namespace tensorwire::sim
