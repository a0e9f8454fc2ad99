// Everything a protocol instance gets from the outside world, for one rank.
// Backends build it; protocols take it by value and never reach past it.
#pragma once

#include <vector>

#include "core/clock.h"
#include "core/copy_engine.h"
#include "core/memory.h"
#include "core/nic.h"
#include "core/trace_sink.h"
#include "core/transfer_attribution.h"

namespace tensorwire {

struct RankEnv {
  Nic& nic;
  Clock& clock;
  CopyEngine& copy_engine;
  MemorySpace& memory;
  TraceSink& trace;
  // Where the backend attributes work to tensor transfers (null: it does not).
  TransferAttribution* attribution = nullptr;
  // The ranks this rank's workload exchanges tensors with, either way, in
  // increasing order (core/workload/peer_sets.h); null when the runner does
  // not know (every rank may be a peer). A protocol may keep per-peer state
  // only for these; the runner owns the vectors for the run.
  const std::vector<RankId>* peers = nullptr;
};

}  // namespace tensorwire
