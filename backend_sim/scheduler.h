// Tie-breaking among events due at the same simulated time. The default keeps
// insertion order (FIFO by sequence number); model/ replaces it to explore
// other orders. Only events that are independent may be reordered: the
// simulator never offers two events of one queue pair's in-order stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tensorwire::sim {

// What a scheduler may know about a ready event.
struct ReadyEvent {
  uint64_t sequence = 0;  // unique, increasing in insertion order
  uint32_t rank = 0;      // the rank whose progress loop runs it
  const char* kind = "";  // "completion", "timer", "copy", "transfer", ...
  uint64_t parent = 0;    // sequence of the event that scheduled it; 0: set up before the run
  int64_t at_ns = 0;      // when it is due
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // Index into `ready` (never empty) of the event to run next. Called when
  // more than one event is ready, and for a lone event too while
  // wants_every_event() (a model checker offering a fault there).
  virtual size_t pick(std::span<const ReadyEvent> ready) = 0;
  virtual bool wants_every_event() const { return false; }
  // Every event, chosen or alone, just before it runs (the model checker
  // fingerprints each rank's history with it).
  virtual void ran(const ReadyEvent& /*event*/) {}
  // The running event changed the state of `rank` directly (not by
  // scheduling an event for it): a queue pair's far end moved to error, a
  // peer's in-flight arrivals were dropped. Partial-order reduction needs
  // these, since it takes events of different ranks to be independent.
  virtual void touched(uint32_t /*rank*/) {}
};

// Insertion order. The simulator's default.
class FifoScheduler final : public Scheduler {
 public:
  size_t pick(std::span<const ReadyEvent>) override { return 0; }
};

}  // namespace tensorwire::sim
