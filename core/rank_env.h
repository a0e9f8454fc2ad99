// Everything a protocol instance gets from the outside world, for one rank.
// Backends build it; protocols take it by value and never reach past it.
#pragma once

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
};

}  // namespace tensorwire
