// What a collective copy reports as it runs, for invariant checkers (and the
// model checker, which checks them after every event). Every hook has an empty
// default; the executor calls them on every rank of one simulation, so an
// observer sees the whole cluster's truth, not one rank's possibly stale view.
#pragma once

#include <cstdint>

#include "core/clock.h"

namespace tensorwire::collectives {

class CollectiveObserver {
 public:
  virtual ~CollectiveObserver() = default;
  // An IB buffer was carved from its memory's pool.
  virtual void on_ib_allocated(uint32_t /*buffer*/, uint64_t /*pool_bytes_in_use*/,
                               uint64_t /*pool_bytes*/) {}
  // An IB buffer went back to its pool (its reference count reached zero).
  virtual void on_ib_freed(uint32_t /*buffer*/) {}
  // `copy` is about to move stream bytes [begin, end) from its input into its output.
  virtual void on_chunk_issued(uint32_t /*copy*/, uint64_t /*begin*/, uint64_t /*end*/) {}
  // `copy` has finished reading its input up to `read` (and written it out).
  virtual void on_chunk_done(uint32_t /*copy*/, uint64_t /*read*/) {}
  // The buffer's owner learned that stream bytes [0, written) have landed in it.
  virtual void on_bytes_landed(uint32_t /*buffer*/, uint64_t /*written*/) {}
  // `copy` has moved every byte; it drops its reference on an IB input.
  virtual void on_copy_finished(uint32_t /*copy*/) {}
  virtual void on_destination_complete(uint32_t /*buffer*/, TimeNs /*at_ns*/) {}
};

// Two observers as one (the invariants and the progress count), each hearing
// every hook in turn.
class CollectiveObserverPair final : public CollectiveObserver {
 public:
  CollectiveObserverPair(CollectiveObserver& first, CollectiveObserver& second)
      : first_(first), second_(second) {}

  void on_ib_allocated(uint32_t buffer, uint64_t in_use, uint64_t pool) override {
    first_.on_ib_allocated(buffer, in_use, pool);
    second_.on_ib_allocated(buffer, in_use, pool);
  }
  void on_ib_freed(uint32_t buffer) override {
    first_.on_ib_freed(buffer);
    second_.on_ib_freed(buffer);
  }
  void on_chunk_issued(uint32_t copy, uint64_t begin, uint64_t end) override {
    first_.on_chunk_issued(copy, begin, end);
    second_.on_chunk_issued(copy, begin, end);
  }
  void on_chunk_done(uint32_t copy, uint64_t read) override {
    first_.on_chunk_done(copy, read);
    second_.on_chunk_done(copy, read);
  }
  void on_bytes_landed(uint32_t buffer, uint64_t written) override {
    first_.on_bytes_landed(buffer, written);
    second_.on_bytes_landed(buffer, written);
  }
  void on_copy_finished(uint32_t copy) override {
    first_.on_copy_finished(copy);
    second_.on_copy_finished(copy);
  }
  void on_destination_complete(uint32_t buffer, TimeNs at_ns) override {
    first_.on_destination_complete(buffer, at_ns);
    second_.on_destination_complete(buffer, at_ns);
  }

 private:
  CollectiveObserver& first_;
  CollectiveObserver& second_;
};

}  // namespace tensorwire::collectives
