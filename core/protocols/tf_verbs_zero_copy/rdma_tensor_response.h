// RdmaTensorResponse: one TENSOR_REQUEST served, from its arrival to the
// completion of the content write (sender side).
//
//   Start()   the tensor is in the local table (now, or when Send arrives):
//             compare its meta-data with the requester's cached copy.
//             Unchanged and a destination given: write the content with
//             imm = request_index — straight from the source tensor (zero
//             copies) when the NIC can read it; through a host staging copy
//             for a GPU without GPUDirect; serialized into a proto buffer for
//             strings. Changed or first time: clone the tensor (so the caller
//             may reuse it), send META_DATA_UPDATE and wait.
//   Resume()  TENSOR_RE_REQUEST: write the clone to the new destination.
//   Destroy() after the write completion (or a failure): free clone and
//             staging, let go of the source tensor.
//
// Dead and empty tensors complete with a 0-byte write-with-imm. A request the
// sender cannot serve (step aborted, allocation failure, a re-request whose
// meta-data differs from the update) is answered with ERROR_STATUS. A
// re-request without destination withdraws the request: it is answered with
// ERROR_STATUS unless a write is already on its way (its immediate then tells
// the receiver that nothing more will land).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/protocols/tf_verbs_zero_copy/rdma_protocol_env.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_tensor_meta_data.h"

namespace tensorwire::tf_verbs {

class RdmaTensorResponse {
 public:
  RdmaTensorResponse(RdmaProtocolEnv& env, uint64_t response_id, RankId peer,
                     const wire::RdmaMessage& request);
  ~RdmaTensorResponse();
  RdmaTensorResponse(const RdmaTensorResponse&) = delete;
  RdmaTensorResponse& operator=(const RdmaTensorResponse&) = delete;

  // The tensor to serve (the table entry, now owned with the other users).
  void Start(std::shared_ptr<SentTensor> sent);
  void Resume(const wire::RdmaMessage& re_request);
  // The content write completed successfully.
  void WriteCompleted();
  // The requester withdrew (re-request without destination).
  void Withdraw();
  // This rank aborted the step (or cannot serve): ERROR_STATUS unless writing.
  void Abort(Status why);
  // The channel is gone: no messages; resources go once nothing is in flight.
  void Fail(Status why);
  void Destroy();

  uint64_t response_id() const { return response_id_; }
  RankId peer() const { return peer_; }
  uint32_t request_index() const { return request_index_; }
  const std::string& name() const { return name_; }
  uint64_t step_id() const { return step_id_; }
  bool waiting_for_send() const { return state_ == State::kWaitingForSend; }
  bool writing() const { return state_ == State::kWriting; }
  bool finished() const { return state_ == State::kFinished; }
  void digest(StateDigest& d) const;  // for model checkers' state caches

 private:
  enum class State : uint8_t {
    kWaitingForSend,    // parked: the request came before Send
    kPreparing,         // a copy (clone / staging) is running on the copy engine
    kWaitingReRequest,  // META_DATA_UPDATE sent, content ready
    kWriting,           // content write posted
    kFinished,
  };
  // Every state change goes through here: it counts the transition.
  void set_state(State next);
  enum class Pending : uint8_t { kNone, kWrite, kErrorStatus, kDestroy };

  Status prepare_content(bool direct);
  // prepare_content's ways to the bytes the write reads (`bytes` of them):
  // strings serialized into a registered proto buffer; the source tensor
  // itself, registered; a clone of host memory on the CPU; a copy of GPU
  // memory on the copy engine (a clone on the GPU with GPUDirect, else host
  // staging), which ends in on_copy_done.
  Status serialize_string_tensor(uint64_t bytes);
  Status read_source_in_place(uint64_t bytes);
  Status clone_on_cpu(uint64_t bytes);
  Status copy_off_gpu(uint64_t bytes);
  void on_copy_done(Status status);
  void post_write();
  void send_error(const Status& why);
  void send_meta_data_update();

  RdmaProtocolEnv& env_;
  uint64_t response_id_;
  RankId peer_;
  std::string name_;
  uint64_t step_id_;
  uint32_t request_index_;
  // The requester's view: cached meta-data and destination.
  RdmaTensorMetaData requested_meta_;
  uint64_t remote_addr_ = 0;
  uint32_t rkey_ = 0;

  State state_ = State::kWaitingForSend;
  RdmaTensorMetaData meta_;     // of the tensor being served
  bool update_sent_ = false;    // META_DATA_UPDATE sent, re-request expected
  bool re_requested_ = false;   // the re-request arrived (maybe while preparing)
  Pending after_copy_ = Pending::kNone;
  Status pending_error_;

  std::shared_ptr<SentTensor> sent_;         // held while the source is read
  std::optional<RegisteredBuffer> content_;  // clone, staging or proto buffer
  // Where the write reads from (the source tensor or content_).
  Sge source_;
};

}  // namespace tensorwire::tf_verbs
