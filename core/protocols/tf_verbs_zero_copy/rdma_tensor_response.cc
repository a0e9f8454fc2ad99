#include "core/protocols/tf_verbs_zero_copy/rdma_tensor_response.h"

#include <utility>

#include "core/assert.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_imm_data.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_write_id.h"
#include "core/protocols/tf_verbs_zero_copy/tensor_proto.h"

namespace tensorwire::tf_verbs {

namespace {

RdmaTensorMetaData meta_of(const wire::RdmaMessage& m) {
  RdmaTensorMetaData meta;
  meta.data_type = m.data_type;
  meta.tensor_shape = m.tensor_shape;
  meta.is_dead = m.is_dead;
  meta.proto_size = (!m.is_dead && m.data_type == DataType::kString) ? m.tensor_bytes : 0;
  return meta;
}

// Clones, staging and proto buffers are only read by the NIC (the CPU or the
// copy engine fills them), and local read needs no right at all.
constexpr Access kSourceAccess = Access::kNone;

}  // namespace

RdmaTensorResponse::RdmaTensorResponse(RdmaProtocolEnv& env, uint64_t response_id, RankId peer,
                                       const wire::RdmaMessage& request)
    : env_(env),
      response_id_(response_id),
      peer_(peer),
      name_(request.name),
      step_id_(request.step_id),
      request_index_(request.request_index),
      requested_meta_(meta_of(request)),
      remote_addr_(request.remote_addr),
      rkey_(request.rkey) {}

RdmaTensorResponse::~RdmaTensorResponse() {
  if (content_) env_.memory_mgr().release_registered(content_->buffer);
}

void RdmaTensorResponse::Start(std::shared_ptr<SentTensor> sent) {
  if (state_ != State::kWaitingForSend || !sent) return;
  sent_ = std::move(sent);
  meta_ = RdmaTensorMetaData::of(sent_->tensor);
  // A request without destination is a first-time request: the requester has
  // no meta-data yet.
  bool direct = remote_addr_ != 0 && requested_meta_ == meta_;
  if (env_.options().planted_bug == PlantedBug::kIgnoreProtoSize && remote_addr_ != 0) {
    // Planted: dtype, shape and is_dead alone decide, as if a string
    // tensor's serialized size could not change with them unchanged.
    direct = requested_meta_.data_type == meta_.data_type &&
             requested_meta_.tensor_shape == meta_.tensor_shape &&
             requested_meta_.is_dead == meta_.is_dead;
  }
  Status st = prepare_content(direct);
  if (!st.is_ok()) {
    send_error(Status(st.code(), "sender cannot serve '" + name_ + "': " + st.message()));
    Destroy();
    return;
  }
  if (!direct) {
    send_meta_data_update();
    if (state_ == State::kFinished) return;
  }
  const bool copy_running = state_ == State::kPreparing;
  if (copy_running && direct && env_.options().planted_bug == PlantedBug::kWriteBeforeStagingCopy) {
    post_write();  // the NIC reads the staging buffer the copy engine is still filling
    return;
  }
  if (copy_running) return;  // continues in on_copy_done
  if (direct) {
    post_write();
  } else {
    set_state(State::kWaitingReRequest);
  }
}

Status RdmaTensorResponse::prepare_content(bool direct) {
  const Tensor& tensor = sent_->tensor;
  uint64_t bytes = meta_.byte_size();
  if (bytes > kMaxTensorBytes) {
    return {StatusCode::kInvalidArgument,
            "tensor of " + std::to_string(bytes) + " bytes exceeds the " +
                std::to_string(kMaxTensorBytes) + " bytes one RDMA write carries"};
  }
  if (bytes == 0) {
    // Dead and empty tensors: the 0-byte write-with-imm is the whole answer.
    const RegisteredBuffer& zero = env_.zero_source();
    source_ = Sge{zero.buffer.addr, 0, zero.region ? zero.region->lkey : 0};
    sent_.reset();
    env_.stats().count(TfVerbsPath::kZeroByteWrite);
    return Status::ok();
  }
  if (tensor.dtype == DataType::kString) return serialize_string_tensor(bytes);
  if (tensor.buffer.length < bytes) {
    return {StatusCode::kInvalidArgument, "source buffer of " +
                                              std::to_string(tensor.buffer.length) +
                                              " bytes is shorter than the tensor"};
  }
  MemoryKind kind = tensor.buffer.kind;
  const PlantedBug bug = env_.options().planted_bug;
  if (is_nic_reachable(kind) && direct) {
    // Zero copies: the NIC reads the source tensor itself.
    if (bug == PlantedBug::kUnregisteredSource) {
      source_ = Sge{tensor.buffer.addr, static_cast<uint32_t>(bytes), 0};
      return Status::ok();
    }
    env_.stats().count(TfVerbsPath::kZeroCopyWrite);
    return read_source_in_place(bytes);
  }
  if (is_host(kind) && bug == PlantedBug::kSkipClone) {
    // The caller's buffer as it is, and the caller told it may reuse it.
    Status st = read_source_in_place(bytes);
    if (st.is_ok()) sent_.reset();
    return st;
  }
  if (is_host(kind)) return clone_on_cpu(bytes);
  return copy_off_gpu(bytes);
}

Status RdmaTensorResponse::serialize_string_tensor(uint64_t bytes) {
  // Not DMA-able: serialize into a registered host buffer and write that.
  RankEnv& env = env_.env();
  auto proto = env_.memory_mgr().allocate_registered(MemoryKind::kHostPinned, 0, bytes,
                                                     kSourceAccess);
  if (!proto.is_ok()) return proto.status();
  content_ = *proto;
  TW_ASSERT(content_->region.has_value() && content_->buffer.length == bytes);
  ++env_.stats().cpu_copies;
  env_.stats().count(TfVerbsPath::kStringSerialized);
  if (env.memory.holds_payload()) {
    // A memory that holds payload views every byte of a host buffer it
    // allocated: the pool just gave this one `bytes` of pinned host memory.
    std::span<std::byte> view = env.memory.host_view(content_->buffer);
    TW_ASSERT_MSG(view.size() >= bytes, "a proto buffer has a host view");
    auto n = wire::serialize_strings(sent_->tensor.strings, view.first(bytes));
    if (!n.is_ok()) return n.status();
    TW_ASSERT_MSG(*n == bytes, "the meta-data's proto size is the serialized size");
  }
  source_ = Sge{content_->buffer.addr, static_cast<uint32_t>(bytes), content_->region->lkey};
  sent_.reset();
  return Status::ok();
}

Status RdmaTensorResponse::read_source_in_place(uint64_t bytes) {
  const Buffer& source = sent_->tensor.buffer;
  auto region = env_.memory_mgr().register_source(source);
  if (!region.is_ok()) return region.status();
  source_ = Sge{source.addr, static_cast<uint32_t>(bytes), region->lkey};
  return Status::ok();
}

Status RdmaTensorResponse::clone_on_cpu(uint64_t bytes) {
  // The caller may overwrite the source before the re-request.
  auto clone = env_.memory_mgr().allocate_registered(MemoryKind::kHostPinned, 0, bytes,
                                                     kSourceAccess);
  if (!clone.is_ok()) return clone.status();
  content_ = *clone;
  TW_ASSERT_MSG(content_->region.has_value(), "a registered pool buffer has its region");
  Status st = env_.env().memory.cpu_copy(content_->buffer, 0, sent_->tensor.buffer, 0, bytes);
  if (!st.is_ok()) return st;
  ++env_.stats().cpu_copies;
  env_.stats().count(TfVerbsPath::kCpuClone);
  source_ = Sge{content_->buffer.addr, static_cast<uint32_t>(bytes), content_->region->lkey};
  sent_.reset();
  return Status::ok();
}

Status RdmaTensorResponse::copy_off_gpu(uint64_t bytes) {
  // A device->device clone (GPUDirect: the NIC reads the clone), or a
  // device->host staging copy (no GPUDirect: the NIC reads host memory).
  const Buffer& source = sent_->tensor.buffer;
  RdmaMemoryMgr& mgr = env_.memory_mgr();
  bool gpu_direct = is_nic_reachable(source.kind);
  auto buffer = gpu_direct ? mgr.allocate_registered(source.kind, source.device, bytes,
                                                     kSourceAccess)
                           : mgr.allocate_registered(MemoryKind::kHostPinned, 0, bytes,
                                                     kSourceAccess);
  if (!buffer.is_ok()) return buffer.status();
  content_ = *buffer;
  TW_ASSERT_MSG(content_->region.has_value(), "a registered pool buffer has its region");
  source_ = Sge{content_->buffer.addr, static_cast<uint32_t>(bytes), content_->region->lkey};
  auto on_done = env_.response_callback(
      response_id_, [](RdmaTensorResponse& r, Status st) { r.on_copy_done(std::move(st)); });
  Status st = env_.env().copy_engine.submit(content_->buffer, 0, source, 0, bytes, on_done);
  if (!st.is_ok()) return st;
  ++env_.stats().device_copies;
  env_.stats().count(gpu_direct ? TfVerbsPath::kGpuClone : TfVerbsPath::kStagingCopy);
  set_state(State::kPreparing);
  return Status::ok();
}

void RdmaTensorResponse::on_copy_done(Status status) {
  if (state_ != State::kPreparing) return;
  sent_.reset();  // the content is in content_ now
  if (after_copy_ == Pending::kDestroy) {
    Destroy();
    return;
  }
  if (after_copy_ == Pending::kErrorStatus) {
    send_error(pending_error_);
    Destroy();
    return;
  }
  if (!status.is_ok()) {
    send_error(Status(status.code(), "copying '" + name_ + "' failed: " + status.message()));
    Destroy();
    return;
  }
  if (!update_sent_ || re_requested_) {
    post_write();
  } else {
    set_state(State::kWaitingReRequest);
  }
}

void RdmaTensorResponse::Resume(const wire::RdmaMessage& re_request) {
  if (re_request.remote_addr == 0) {
    env_.stats().count(TfVerbsPath::kWithdrawalAnswered);
    Withdraw();
    return;
  }
  if (!update_sent_ || re_requested_ ||
      (state_ != State::kWaitingReRequest && state_ != State::kPreparing)) {
    ++env_.stats().protocol_errors;
    return;
  }
  re_requested_ = true;
  if (!(meta_of(re_request) == meta_)) {
    Status why(StatusCode::kInvalidArgument,
               "TENSOR_RE_REQUEST for '" + name_ + "' names meta-data " +
                   meta_of(re_request).to_string() + ", the update said " + meta_.to_string());
    if (state_ == State::kPreparing) {
      after_copy_ = Pending::kErrorStatus;
      pending_error_ = why;
      return;
    }
    send_error(why);
    Destroy();
    return;
  }
  const bool keep_stale = env_.options().planted_bug == PlantedBug::kStaleReRequestAddress &&
                          remote_addr_ != 0;
  if (!keep_stale) {
    remote_addr_ = re_request.remote_addr;
    rkey_ = re_request.rkey;
  }
  if (state_ == State::kWaitingReRequest) post_write();
}

void RdmaTensorResponse::post_write() {
  SendWorkRequest wr;
  bool proto = !meta_.is_dead && meta_.data_type == DataType::kString;
  wr.wr_id = RdmaWriteID{proto ? RdmaWriteIDType::kTensorProtoWrite : RdmaWriteIDType::kTensorWrite,
                         response_id_}
                 .encode();
  wr.opcode = WorkOpcode::kRdmaWriteWithImm;
  wr.local = source_;
  wr.remote_addr = remote_addr_;
  wr.rkey = rkey_;
  wr.imm_data = request_index_;
  // The one write moves the whole content (0 bytes for dead and empty
  // tensors) and names the request by an index an immediate can carry.
  TW_ASSERT(source_.length == meta_.byte_size());
  TW_ASSERT(!is_reserved_imm(request_index_));
  set_state(State::kWriting);
  Status st = env_.post_write(peer_, wr);
  if (!st.is_ok()) {  // the channel is broken; its failure reaches the requester
    if (sent_) sent_->status = st;
    Destroy();
    return;
  }
  const PlantedBug bug = env_.options().planted_bug;
  if (bug == PlantedBug::kDestroyResponseEarly && content_) {
    // The clone is freed while the NIC has yet to read it.
    env_.memory_mgr().discard(content_->buffer);
    content_.reset();
  }
  if (bug == PlantedBug::kSendDoneBeforeWrite && sent_) {
    // SendDone now: the caller may overwrite the tensor the NIC still reads.
    sent_.reset();
  }
  if (bug == PlantedBug::kDeregisterSourceEarly && sent_) {
    // The caller's tensor loses its registration while the NIC still reads it.
    env_.memory_mgr().forget_source(sent_->tensor.buffer);
  }
  ++env_.stats().content_writes;
}

void RdmaTensorResponse::WriteCompleted() {
  if (state_ == State::kWriting) Destroy();
}

void RdmaTensorResponse::Withdraw() {
  Abort(Status(StatusCode::kAborted,
               "request for '" + name_ + "' step " + std::to_string(step_id_) + " withdrawn"));
}

void RdmaTensorResponse::Abort(Status why) {
  switch (state_) {
    case State::kWriting:
    case State::kFinished:
      return;  // a write on its way completes the request by itself
    case State::kPreparing:
      if (after_copy_ == Pending::kNone) {
        after_copy_ = Pending::kErrorStatus;
        pending_error_ = std::move(why);
      }
      return;
    case State::kWaitingForSend:
    case State::kWaitingReRequest:
      if (sent_) sent_->status = why;
      send_error(why);
      Destroy();
      return;
  }
}

void RdmaTensorResponse::Fail(Status why) {
  if (sent_) sent_->status = why;
  switch (state_) {
    case State::kWriting:
    case State::kFinished:
      return;  // the write's completion (success or flush) destroys it
    case State::kPreparing:
      after_copy_ = Pending::kDestroy;
      return;
    case State::kWaitingForSend:
    case State::kWaitingReRequest:
      Destroy();
      return;
  }
}

void RdmaTensorResponse::Destroy() {
  if (content_) env_.memory_mgr().release_registered(content_->buffer);
  content_.reset();
  sent_.reset();
  set_state(State::kFinished);
}

void RdmaTensorResponse::send_error(const Status& why) {
  Status st = env_.send_control(peer_, make_error_status(name_, step_id_, request_index_, why));
  if (st.is_ok()) ++env_.stats().error_statuses_sent;
}

void RdmaTensorResponse::send_meta_data_update() {
  wire::RdmaMessage m;
  m.type = wire::RdmaMessageType::kMetaDataUpdate;
  m.name = name_;
  m.step_id = step_id_;
  m.request_index = request_index_;
  m.remote_addr = 0;
  m.rkey = 0;
  m.is_dead = meta_.is_dead;
  m.data_type = meta_.data_type;
  m.tensor_shape = meta_.tensor_shape;
  m.tensor_bytes = meta_.byte_size();
  m.error_code = StatusCode::kOk;
  Status st = env_.send_control(peer_, m);
  if (!st.is_ok()) {
    Fail(st);
    return;
  }
  update_sent_ = true;
  ++env_.stats().meta_data_updates_sent;
  env_.env().trace.instant(env_.trace_track(), "send META_DATA_UPDATE",
                           env_.env().clock.now_ns(), name_ + " " + meta_.to_string());
}

}  // namespace tensorwire::tf_verbs

namespace tensorwire::tf_verbs {

void RdmaTensorResponse::set_state(State next) {
  static_assert(static_cast<size_t>(State::kFinished) + 1 == RendezvousStats::kResponseStates,
                "the transition table counts every state");
  const size_t from = static_cast<size_t>(state_);
  const size_t to = static_cast<size_t>(next);
  TW_ASSERT_MSG(response_transition_allowed(from, to), "a transition outside the state machine's table");
  env_.stats().response_transitions[from][to] += 1;
  state_ = next;
}


void RdmaTensorResponse::digest(StateDigest& d) const {
  d.add(response_id_).add(peer_).add(name_).add(step_id_).add(request_index_);
  requested_meta_.digest(d);
  d.add(remote_addr_).add(rkey_).add(static_cast<uint64_t>(state_));
  meta_.digest(d);
  d.add(update_sent_ ? 1 : 0).add(re_requested_ ? 1 : 0).add(static_cast<uint64_t>(after_copy_));
  d.add(static_cast<uint64_t>(pending_error_.code())).add(sent_ != nullptr ? 1 : 0);
  digest_buffer(d, content_);
  d.add(source_.addr).add(source_.length).add(source_.lkey);
}

}  // namespace tensorwire::tf_verbs
