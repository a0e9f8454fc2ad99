// Everything a protocol instance gets from the outside world, for one rank.
// Backends build it; protocols take it by value and never reach past it.
#pragma once

#include "core/clock.h"
#include "core/copy_engine.h"
#include "core/memory.h"
#include "core/nic.h"
#include "core/trace_sink.h"

namespace tensorwire {

struct RankEnv {
  Nic& nic;
  Clock& clock;
  CopyEngine& copy_engine;
  MemorySpace& memory;
  TraceSink& trace;
};

}  // namespace tensorwire
