// How a simulation runs: its seed and whether buffers carry bytes. The
// cluster it simulates is core/cluster.h.
#pragma once

#include <cstdint>

#include "core/cluster.h"

namespace tensorwire::sim {

struct SimOptions {
  // What one rank's memory may hold in payload mode by default: a scenario too
  // big for payload mode fails with kResourceLimit instead of exhausting the machine.
  static constexpr uint64_t kDefaultPayloadLimitBytesPerRank = 8ull << 30;

  uint64_t seed = 1;
  bool payload = true;  // false: timing-only, buffers have no bytes
  uint64_t payload_limit_bytes_per_rank = kDefaultPayloadLimitBytesPerRank;
  // What every rank's memory together may hold in payload mode (allocations
  // and the small buffers timing mode gives bytes): the machine's share the
  // run may use. The command line sets it (--memory-limit, default a share
  // of the machine's memory); a library caller gets no total limit.
  static constexpr uint64_t kNoPayloadLimitBytesTotal = UINT64_MAX;
  uint64_t payload_limit_bytes_total = kNoPayloadLimitBytesTotal;
  // The model checker's adversarial allocator: freed memory is poisoned and
  // its addresses are handed out again first (lowest address first, so a run
  // stays a pure function of its inputs), so a DMA that outlives its buffer
  // corrupts another's bytes instead of vanishing. Plain runs keep addresses
  // fresh.
  bool adversarial_memory = false;
  // A planted allocator bug, for the DMA sanitizer's tests only: each
  // allocation starts 256 bytes after the previous one, inside it.
  bool plant_overlapping_allocations = false;
  // Under a scheduler, memory keeps per-block content hashes up to date for
  // state digests (Simulator::state_digest). A model checker that never
  // digests the state (random walks, PCT) turns them off: they are a few
  // percent of its executions.
  bool state_digests = true;
  // Keep the ledger of what each tensor transfer's work requests and copies
  // did (Simulator::transfer_breakdown). A run that reports no breakdowns
  // (a model checker's executions) turns it off.
  bool transfer_ledger = true;
};

}  // namespace tensorwire::sim
