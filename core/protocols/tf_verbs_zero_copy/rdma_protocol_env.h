// What an RdmaTensorRequest or RdmaTensorResponse may ask of the rendezvous
// that owns it: the rank's environment, memory, counters, and ways to put work
// on a channel. Asynchronous events (copy engine, timers) come back through
// callbacks keyed by request_index / response id, never by pointer, so an
// event for an object that is already gone is dropped.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/protocols/tf_verbs_zero_copy/rdma_memory_mgr.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_rendezvous.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_options.h"
#include "core/rank_env.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_message.h"

namespace tensorwire::tf_verbs {

class RdmaTensorRequest;
class RdmaTensorResponse;

// A tensor given to Send, shared by the responses that still read it. When
// the last holder lets go, SendDone runs (from the progress loop, deferred by
// a zero-delay timer so it never re-enters the protocol).
struct SentTensor {
  SentTensor(Clock& clock, std::shared_ptr<bool> alive, Tensor t, SendDone d)
      : clock_(clock), alive_(std::move(alive)), tensor(std::move(t)), done(std::move(d)) {}
  ~SentTensor() {
    if (!done || !*alive_) return;  // the rendezvous is gone: nobody to tell
    clock_.schedule_after(0, [alive = alive_, d = std::move(done), s = status] {
      if (*alive) d(s);
    });
  }
  SentTensor(const SentTensor&) = delete;
  SentTensor& operator=(const SentTensor&) = delete;

  Clock& clock_;
  std::shared_ptr<bool> alive_;  // false once the rendezvous is destroyed
  Tensor tensor;
  SendDone done;
  Status status;  // what SendDone reports
};

class RdmaProtocolEnv {
 public:
  virtual ~RdmaProtocolEnv() = default;

  virtual RankEnv& env() = 0;
  virtual const TfVerbsOptions& options() const = 0;
  virtual RdmaMemoryMgr& memory_mgr() = 0;
  virtual RendezvousStats& stats() = 0;

  // A control message to `peer` (posted now or queued on its channel).
  virtual Status send_control(RankId peer, const wire::RdmaMessage& message) = 0;
  // A tensor content write to `peer` (posted now or queued on its channel).
  virtual Status post_write(RankId peer, const SendWorkRequest& wr) = 0;
  // A registered host buffer of length 0: the source of 0-byte writes
  // (dead and empty tensors).
  virtual const RegisteredBuffer& zero_source() const = 0;

  // Callbacks that find their object again by key when they run.
  virtual std::function<void(Status)> request_callback(
      uint32_t request_index, std::function<void(RdmaTensorRequest&, Status)> event) = 0;
  virtual std::function<void(Status)> response_callback(
      uint64_t response_id, std::function<void(RdmaTensorResponse&, Status)> event) = 0;

  // For trace instants: "rank N".
  virtual const std::string& trace_track() const = 0;
};

// Builds an ERROR_STATUS message (message text truncated to what the wire allows).
wire::RdmaMessage make_error_status(const std::string& name, uint64_t step_id,
                                    uint32_t request_index, const Status& error);

}  // namespace tensorwire::tf_verbs
