// A Nic that forwards to another and tells a TraceSink what went through it,
// on the tracks the simulator uses (backend_sim/rc_transport.cc), so a verbs
// trace and a simulated one read alike in Perfetto:
//   "nodeR/nic tx to nodeP"   one slice per send, write, write with imm or
//                             read, from its post to its completion here
//   "nodeR/nic rx from nodeP" one instant per receive completion (a send
//                             landed, or a write with imm finished)
//   "rank R/cpu"              register memory / deregister memory, as long as
//                             the call took
// Failed completions keep their slice, with the status in the detail. Only
// put in place when a trace is asked for: it costs a clock read and a string
// or two per work request.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/clock.h"
#include "core/forwarding_nic.h"
#include "core/trace_sink.h"

namespace tensorwire {

class TracingNic final : public ForwardingNic {
 public:
  // None is owned; all outlive this.
  TracingNic(Nic& inner, const Clock& clock, TraceSink& trace);

  Result<MemoryRegion> register_memory(const Buffer& buffer, Access access) override;
  Status deregister_memory(const MemoryRegion& region) override;
  Status post_send(QpHandle qp, const SendWorkRequest& wr) override;
  void set_completion_handler(CompletionHandler handler) override;

 private:
  struct Posted {
    uint64_t wr_id = 0;
    WorkOpcode opcode = WorkOpcode::kSend;
    uint32_t bytes = 0;
    TimeNs posted_ns = 0;
    TimeNs post_call_ns = 0;  // how long the inner post_send took
  };

  void trace_completion(const Completion& c);

  const Clock& clock_;
  TraceSink& trace_;
  // Per peer, the work requests posted and not yet completed, oldest first:
  // an RC send queue completes in the order it was posted.
  std::vector<std::deque<Posted>> posted_;
};

}  // namespace tensorwire
