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

// What an event may share with others, finer than "rank r": an event of a
// rank's code changes all of that rank's state (its protocol, receive queues,
// registrations and the rest) unless it is the NIC's own work; these name the
// parts the NIC's work and other ranks' events reach.
struct SharedObject {
  enum class Kind : uint8_t {
    kRank,       // all of rank's state: another rank's event changed it (a QP's far end to error)
    kSendQueue,  // the send side of queue pair rank -> peer: its work requests and wire
    kMemory,     // rank's bytes and registrations at [addr, addr + length)
    kCpu,        // when rank's CPU is next free (work is charged to it)
    // rank's end of its queue pair to peer: the QP's state, its posted
    // receives, its work requests not yet completed, the arrivals waiting on
    // it. Rank's code reaches it only through posts and state queries, so an
    // injected QP error need not be ordered with rank's other work.
    kQueuePair,
  };
  Kind kind = Kind::kRank;
  uint32_t rank = 0;
  uint32_t peer = 0;
  uint64_t addr = 0;
  uint64_t length = 0;

  static SharedObject whole_rank(uint32_t rank) { return {Kind::kRank, rank, 0, 0, 0}; }
  static SharedObject send_queue(uint32_t rank, uint32_t peer) { return {Kind::kSendQueue, rank, peer, 0, 0}; }
  static SharedObject memory(uint32_t rank, uint64_t addr, uint64_t length) {
    return {Kind::kMemory, rank, 0, addr, length};
  }
  static SharedObject cpu(uint32_t rank) { return {Kind::kCpu, rank, 0, 0, 0}; }
  static SharedObject queue_pair(uint32_t rank, uint32_t peer) { return {Kind::kQueuePair, rank, peer, 0, 0}; }
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // Index into `ready` (never empty) of the event to run next. Called when
  // more than one event is ready, and for a lone event too while
  // wants_every_event() (a model checker offering a fault there).
  // kGatherAgain: the scheduler changed the world instead (a model checker
  // injected a fault, which may schedule events and cancel others); the
  // queue gathers the ready events again and asks once more. The clock is
  // already at the instant being decided when pick is called.
  static constexpr size_t kGatherAgain = SIZE_MAX;
  // The parent (ReadyEvent::parent) of events scheduled inside pick, by an
  // injected fault: no event that ran created them.
  static constexpr uint64_t kInjectedSequence = UINT64_MAX;
  virtual size_t pick(std::span<const ReadyEvent> ready) = 0;
  virtual bool wants_every_event() const { return false; }
  // Every event, chosen or alone, just before it runs (the model checker
  // fingerprints each rank's history with it).
  virtual void ran(const ReadyEvent& /*event*/) {}
  // Something the running event reads or changes beyond what its kind says
  // (see SharedObject). Partial-order reduction needs these, since it takes
  // events that share no object to be independent.
  virtual void used(const SharedObject& /*object*/) {}
  // Which kinds of SharedObject used() acts on, bit k for Kind k: the event
  // queue passes only those (read once, when the scheduler is installed). A
  // random walk, which never asks which events were independent, takes none
  // of the dozen an event reports, each a chain of virtual calls.
  static constexpr uint32_t kind_bit(SharedObject::Kind kind) {
    return 1u << static_cast<uint32_t>(kind);
  }
  // kQueuePair is the last Kind.
  static constexpr uint32_t kEveryKind =
      (2u << static_cast<uint32_t>(SharedObject::Kind::kQueuePair)) - 1;
  virtual uint32_t used_kinds() const { return kEveryKind; }
  // The running event is the NIC's own work on the send side of rank -> peer
  // (a transfer ending, the next request going on the wire), not rank's code:
  // by itself it changes that send queue only, and rank's memory, CPU or
  // protocol only where it reports using them.
  virtual void nic_work_on_send_queue(uint32_t /*rank*/, uint32_t /*peer*/) {}
};

// Insertion order. The simulator's default.
class FifoScheduler final : public Scheduler {
 public:
  size_t pick(std::span<const ReadyEvent>) override { return 0; }
};

}  // namespace tensorwire::sim
