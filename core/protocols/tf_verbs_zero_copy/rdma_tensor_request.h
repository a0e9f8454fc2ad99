// RdmaTensorRequest: one Recv, from the first TENSOR_REQUEST to the done
// callback (receiver side).
//
//   Start()              allocate the result (and host proxy / proto buffer)
//                        from the meta-data cache, send TENSOR_REQUEST with
//                        the cached meta-data and the destination address.
//   RecvTensorMetaData() META_DATA_UPDATE: update the cache, reallocate if the
//                        size or type changed, send TENSOR_RE_REQUEST.
//   RecvTensorContent()  the peer's write-with-imm landed: deserialize strings,
//                        or copy host proxy -> GPU, then done(ok, tensor).
//   RecvErrorStatus()    ERROR_STATUS from the peer: done(error).
//
// Every request completes with exactly one write-with-imm carrying its
// request_index — dead and empty tensors with a 0-byte write — or with
// ERROR_STATUS, or with a local failure.
//
// When the request fails locally (step aborted, timeout) while the peer may
// still write into its destination, done() runs at once but the request stays
// as a "withdrawn" entry holding request_index and the destination: it sends a
// TENSOR_RE_REQUEST without destination (remote_addr 0) to withdraw, and lets
// go only when the peer's write or its ERROR_STATUS confirms nothing more will
// land. A broken channel needs no confirmation (nothing lands through a QP in
// error), but its destinations are deregistered rather than pooled, since a
// channel closed by us (malformed message) is still connected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/protocols/tf_verbs_zero_copy/rdma_protocol_env.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_tensor_meta_data.h"

namespace tensorwire::tf_verbs {

class RdmaTensorRequest {
 public:
  struct Completion {
    RecvDone done;
    Status status;
    Tensor tensor;
  };

  RdmaTensorRequest(RdmaProtocolEnv& env, uint32_t request_index, RankId src, std::string name,
                    uint64_t step_id, RecvArgs args, RecvDone done);
  ~RdmaTensorRequest();
  RdmaTensorRequest(const RdmaTensorRequest&) = delete;
  RdmaTensorRequest& operator=(const RdmaTensorRequest&) = delete;

  void Start();
  void RecvTensorMetaData(const wire::RdmaMessage& message);
  void RecvTensorContent(uint32_t byte_len);
  void RecvErrorStatus(const Status& error);
  // Step aborted or timed out: done(why) now; withdraw from the peer.
  void Abort(Status why);
  // The channel is gone: done(why) now; nothing more will arrive.
  void Fail(Status why);

  uint32_t request_index() const { return request_index_; }
  RankId src() const { return src_; }
  const std::string& name() const { return name_; }
  uint64_t step_id() const { return step_id_; }
  // The buffer the peer is asked to write into, if any.
  std::optional<Buffer> destination() const;
  // The done callback has run or is about to (take_completion).
  bool done_delivered() const { return completion_taken_ || completion_.has_value(); }
  // All resources released: the owner may erase the request.
  bool finished() const { return state_ == State::kFinished; }
  // The outcome to hand to the done callback, once decided (at most once).
  std::optional<Completion> take_completion();
  void digest(StateDigest& d) const;  // for model checkers' state caches

 private:
  enum class State : uint8_t {
    kIdle,
    kRequested,   // TENSOR_REQUEST sent, waiting for the content or a META_DATA_UPDATE
    kReRequested, // TENSOR_RE_REQUEST sent: only the content (or an error) may follow
    kCopying,     // content landed in the host proxy, proxy -> GPU copy running
    kWithdrawn,   // done delivered, waiting for the peer to confirm
    kFinished,
  };

  // Every state change goes through here: it counts the transition.
  void set_state(State next);
  Status allocate(const RdmaTensorMetaData& meta);
  void release_buffers(bool discard);
  wire::RdmaMessage make_message(wire::RdmaMessageType type) const;
  void complete(Status status, Tensor tensor);
  void fail_and_withdraw(Status why);
  void on_copy_done(Status status);
  void finish(bool discard);
  // RecvTensorContent's endings for a string tensor (deserialized from the
  // proto buffer) and for a GPU destination reached through a host proxy
  // (the proxy -> GPU copy started; on_copy_done delivers).
  void deliver_strings(Tensor tensor, const RdmaTensorMetaData& meta);
  void copy_out_of_proxy(Tensor tensor, uint64_t expected);

  RdmaProtocolEnv& env_;
  uint32_t request_index_;
  RankId src_;
  std::string name_;
  uint64_t step_id_;
  RecvArgs args_;
  RecvDone done_;
  State state_ = State::kIdle;
  bool fail_after_copy_ = false;  // channel failed while copying: discard on copy done

  // What is allocated, and for which meta-data.
  std::optional<RdmaTensorMetaData> allocated_meta_;
  std::optional<RegisteredBuffer> result_;  // registered result, proto buffer or sink
  std::optional<Buffer> device_result_;     // unregistered GPU result (proxy case)
  // When set, the content lands here and is copied to device_result_.
  std::optional<RegisteredBuffer> proxy_;
  std::optional<TimerId> timer_;

  std::optional<Completion> completion_;
  bool completion_taken_ = false;
};

}  // namespace tensorwire::tf_verbs
