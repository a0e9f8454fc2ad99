// The point-to-point protocol seam: what every Send/Recv protocol implements
// (TensorFlow verbs zero-copy, the legacy buffer/ack protocol, MVAPICH2-GPU's
// RTS/CTS rendezvous, OneFlow's eager message + RMA read). The workload
// driver, the runners, the reports and the model checker hold a Rendezvous
// and never name the protocol behind it; the registry
// (core/protocols/protocol_registry.h) builds one from a scenario's
// [protocol] name.
//
// One instance per rank, driven by the rank's single progress loop: no call
// blocks, completions arrive as callbacks.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "core/coverage.h"
#include "core/memory.h"
#include "core/nic.h"
#include "core/protocol_counters.h"
#include "core/state_transitions.h"
#include "core/status.h"
#include "core/tensor.h"

namespace tensorwire {

// Where the receiver wants the result tensor (TensorFlow's recv device and
// allocator attributes).
struct RecvArgs {
  MemoryKind dst_kind = MemoryKind::kHostPinned;
  uint32_t dst_device = 0;
};

// Status ok: `tensor` holds the received tensor (its buffer belongs to the
// caller until it calls release()). Otherwise the reason the Recv failed.
using RecvDone = std::function<void(Status status, Tensor tensor)>;
// Runs once the sender no longer needs the sent tensor's memory (the content
// has left, or the step aborted). May be empty.
using SendDone = std::function<void(Status status)>;

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;

  // Sets up what the protocol keeps per peer (rings, pools, queue pairs'
  // receives) and takes over the NIC's completion handler. Call once, first.
  virtual Status start() = 0;

  // Makes (name, step_id) available to the peer that Recvs it. Send before
  // Recv and Recv before Send both work.
  virtual Status send(std::string_view name, uint64_t step_id, Tensor tensor,
                      SendDone done = {}) = 0;
  // Asks rank `src` for (name, step_id); `done` runs once, with the tensor or
  // the reason it failed.
  virtual void recv(RankId src, std::string_view name, uint64_t step_id, RecvArgs args,
                    RecvDone done) = 0;

  // Fails every pending Recv and Send of the step with `why`; later requests
  // from peers for the step are answered with an error.
  virtual void abort_step(uint64_t step_id, Status why) = 0;
  // The application could not produce (name, step_id): the peer's Recv for
  // it, pending now or arriving later, fails with `why` instead of waiting
  // forever. An error when the tensor was already sent.
  virtual Status fail_send(std::string_view name, uint64_t step_id, Status why) = 0;
  // Gives a received tensor's memory back (it may be reused by later Recvs).
  virtual void release(const Tensor& tensor) = 0;

  // Work still alive (requests, responses, transfers in flight): 0 when the
  // protocol is quiescent. A run that ends with work outstanding is a hang.
  virtual size_t outstanding_work() const = 0;
  // A hash of everything the protocol keeps, equal for equal states however
  // they were reached: for the model checker's state cache.
  virtual uint64_t state_digest() const = 0;
  // What the protocol did and survived, by name, in a fixed order.
  virtual ProtocolCounters counters() const = 0;
  // Its state machines, with the transitions each allows and has taken.
  virtual std::vector<TransitionTable> transition_tables() const = 0;
  // Counts what it reached into `into`, which holds its descriptor's
  // declaration (core/coverage.h): messages and paths; the runner adds the
  // transition tables' own. Counts into a declaration, so that a run of many
  // executions builds no names per rank.
  virtual void add_coverage(Coverage& into) const = 0;
};

}  // namespace tensorwire
