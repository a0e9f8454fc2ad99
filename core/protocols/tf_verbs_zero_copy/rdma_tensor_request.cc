#include "core/protocols/tf_verbs_zero_copy/rdma_tensor_request.h"

#include <utility>

#include "core/assert.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_imm_data.h"
#include "core/protocols/tf_verbs_zero_copy/tensor_proto.h"

namespace tensorwire::tf_verbs {

namespace {

constexpr Access kDestinationAccess = Access::kLocalWrite | Access::kRemoteWrite;

enum class Layout : uint8_t { kDead, kString, kDma };
Layout layout_of(const RdmaTensorMetaData& m) {
  if (m.is_dead) return Layout::kDead;
  return m.data_type == DataType::kString ? Layout::kString : Layout::kDma;
}

RdmaTensorMetaData meta_of(const wire::RdmaMessage& m) {
  RdmaTensorMetaData meta;
  meta.data_type = m.data_type;
  meta.tensor_shape = m.tensor_shape;
  meta.is_dead = m.is_dead;
  meta.proto_size = (!m.is_dead && m.data_type == DataType::kString) ? m.tensor_bytes : 0;
  return meta;
}

}  // namespace

RdmaTensorRequest::RdmaTensorRequest(RdmaProtocolEnv& env, uint32_t request_index, RankId src,
                                     std::string name, uint64_t step_id, RecvArgs args,
                                     RecvDone done)
    : env_(env),
      request_index_(request_index),
      src_(src),
      name_(std::move(name)),
      step_id_(step_id),
      args_(args),
      done_(std::move(done)) {
  // The allocator hands out only indices an immediate can carry.
  TW_ASSERT(!is_reserved_imm(request_index_));
}

RdmaTensorRequest::~RdmaTensorRequest() {
  if (state_ != State::kFinished) release_buffers(/*discard=*/true);
  if (timer_) env_.env().clock.cancel(*timer_);
}

std::optional<Buffer> RdmaTensorRequest::destination() const {
  if (proxy_) return proxy_->buffer;
  if (result_) return result_->buffer;
  return std::nullopt;
}

std::optional<RdmaTensorRequest::Completion> RdmaTensorRequest::take_completion() {
  if (!completion_) return std::nullopt;
  std::optional<Completion> c = std::move(completion_);
  completion_.reset();
  completion_taken_ = true;
  return c;
}

Status RdmaTensorRequest::allocate(const RdmaTensorMetaData& meta) {
  RdmaMemoryMgr& mgr = env_.memory_mgr();
  Layout layout = layout_of(meta);
  if (layout == Layout::kDead) {
    // A 0-byte sink: the 0-byte write-with-imm that completes a dead tensor
    // needs a valid (address, rkey) like any other.
    auto sink = mgr.allocate_registered(MemoryKind::kHostPinned, 0, 0, kDestinationAccess);
    if (!sink.is_ok()) return sink.status();
    result_ = *sink;
  } else if (layout == Layout::kString) {
    auto proto = mgr.allocate_registered(MemoryKind::kHostPinned, 0, meta.proto_size,
                                         kDestinationAccess);
    if (!proto.is_ok()) return proto.status();
    result_ = *proto;
  } else if (is_nic_reachable(args_.dst_kind)) {
    auto result = mgr.allocate_registered(args_.dst_kind, args_.dst_device, meta.byte_size(),
                                          kDestinationAccess);
    if (!result.is_ok()) return result.status();
    result_ = *result;
    if (!is_host(args_.dst_kind)) env_.stats().count(TfVerbsPath::kGpuDirectDestination);
  } else {
    // The NIC cannot reach this GPU: it writes into a registered host proxy,
    // and the copy engine moves the content to the GPU afterwards.
    auto device = mgr.allocate_unregistered(args_.dst_kind, args_.dst_device, meta.byte_size());
    if (!device.is_ok()) return device.status();
    device_result_ = *device;
    auto proxy = mgr.allocate_registered(MemoryKind::kHostPinned, 0, meta.byte_size(),
                                         kDestinationAccess);
    if (!proxy.is_ok()) {
      mgr.release_registered(*device_result_);
      device_result_.reset();
      return proxy.status();
    }
    proxy_ = *proxy;
  }
  // A destination the peer can write into: registered, and as long as the content.
  const std::optional<RegisteredBuffer>& dest = proxy_ ? proxy_ : result_;
  TW_ASSERT(dest.has_value() && dest->region.has_value());
  TW_ASSERT(dest->buffer.length == meta.byte_size());
  allocated_meta_ = meta;
  return Status::ok();
}

void RdmaTensorRequest::release_buffers(bool discard) {
  RdmaMemoryMgr& mgr = env_.memory_mgr();
  auto give_back = [&](const Buffer& b) {
    if (discard) {
      mgr.discard(b);
    } else {
      mgr.release_registered(b);
    }
  };
  if (result_) give_back(result_->buffer);
  if (proxy_) give_back(proxy_->buffer);
  if (device_result_) mgr.release_registered(*device_result_);  // never remotely reachable
  result_.reset();
  proxy_.reset();
  device_result_.reset();
  allocated_meta_.reset();
}

wire::RdmaMessage RdmaTensorRequest::make_message(wire::RdmaMessageType type) const {
  wire::RdmaMessage m;
  m.type = type;
  m.name = name_;
  m.step_id = step_id_;
  m.request_index = request_index_;
  m.remote_addr = 0;
  m.rkey = 0;
  m.is_dead = false;
  m.data_type = DataType::kFloat32;
  m.tensor_bytes = 0;
  m.error_code = StatusCode::kOk;
  const std::optional<RegisteredBuffer>& dest = proxy_ ? proxy_ : result_;
  if (allocated_meta_ && dest && dest->region) {
    m.remote_addr = dest->buffer.addr;
    m.rkey = dest->region->rkey;
    m.is_dead = allocated_meta_->is_dead;
    m.data_type = allocated_meta_->data_type;
    m.tensor_shape = allocated_meta_->tensor_shape;
    m.tensor_bytes = allocated_meta_->byte_size();
  }
  return m;
}

void RdmaTensorRequest::Start() {
  if (state_ != State::kIdle) return;
  RankEnv& env = env_.env();
  if (env_.options().request_timeout_ns > 0) {
    auto on_timeout = env_.request_callback(request_index_, [](RdmaTensorRequest& r, Status) {
      r.timer_.reset();
      r.env_.stats().count(TfVerbsPath::kRequestTimedOut);
      r.Abort(Status(StatusCode::kAborted, "request for '" + r.name_ + "' step " +
                                               std::to_string(r.step_id_) + " timed out"));
    });
    timer_ = env.clock.schedule_after(env_.options().request_timeout_ns,
                                      [on_timeout] { on_timeout(Status::ok()); });
  }
  if (auto cached = env_.memory_mgr().get_tensor_meta_data(src_, name_)) {
    // If this fails the request goes without a destination: the sender then
    // answers with META_DATA_UPDATE and allocation is retried there.
    if (allocate(*cached).is_ok()) {
      env_.stats().count(TfVerbsPath::kMetaDataCacheHit);
    } else {
      release_buffers(false);
    }
  } else {
    env_.stats().count(TfVerbsPath::kFirstRequest);
  }
  Status st = env_.send_control(src_, make_message(wire::RdmaMessageType::kTensorRequest));
  if (!st.is_ok()) {
    complete(st, {});
    finish(/*discard=*/false);
    return;
  }
  ++env_.stats().tensor_requests_sent;
  set_state(State::kRequested);
}

void RdmaTensorRequest::RecvTensorMetaData(const wire::RdmaMessage& message) {
  if (state_ == State::kWithdrawn) return;  // the peer will answer the withdrawal
  if (state_ != State::kRequested) {
    // Also a second update after our re-request: the sender may already be
    // writing into the destination we told it about, so we cannot move it.
    ++env_.stats().protocol_errors;
    return;
  }
  RdmaTensorMetaData meta = meta_of(message);
  Status valid = meta.validate(kMaxTensorBytes);
  if (!valid.is_ok()) {
    fail_and_withdraw(Status(StatusCode::kMalformedMessage,
                             "META_DATA_UPDATE for '" + name_ + "': " + valid.message()));
    return;
  }
  env_.env().trace.instant(env_.trace_track(), "META_DATA_UPDATE", env_.env().clock.now_ns(),
                           name_ + " " + meta.to_string());
  env_.memory_mgr().set_tensor_meta_data(src_, name_, meta);
  // The sender never writes into a destination it answered with a meta-data
  // update, so the old buffers can go back to the pool.
  bool reusable = allocated_meta_ && layout_of(*allocated_meta_) == layout_of(meta) &&
                  allocated_meta_->byte_size() == meta.byte_size();
  if (env_.options().planted_bug == PlantedBug::kNoReallocOnSizeChange && allocated_meta_) {
    reusable = true;  // cached the new meta-data, kept the old buffer
  }
  if (reusable) {
    allocated_meta_ = meta;
    env_.stats().count(TfVerbsPath::kUpdateKeepsBuffer);
  } else {
    if (allocated_meta_) env_.stats().count(TfVerbsPath::kUpdateReallocates);
    release_buffers(false);
    Status st = allocate(meta);
    if (!st.is_ok()) {
      release_buffers(false);
      fail_and_withdraw(Status(st.code(), "allocating '" + name_ + "' (" + meta.to_string() +
                                              "): " + st.message()));
      return;
    }
  }
  Status st = env_.send_control(src_, make_message(wire::RdmaMessageType::kTensorReRequest));
  if (!st.is_ok()) {
    complete(st, {});
    finish(/*discard=*/true);
    return;
  }
  ++env_.stats().re_requests_sent;
  set_state(State::kReRequested);
}

void RdmaTensorRequest::RecvTensorContent(uint32_t byte_len) {
  if (state_ == State::kWithdrawn) {
    finish(/*discard=*/false);  // the write that was in flight landed; nothing more will
    return;
  }
  if ((state_ != State::kRequested && state_ != State::kReRequested) || !allocated_meta_) {
    ++env_.stats().protocol_errors;
    return;
  }
  const RdmaTensorMetaData meta = *allocated_meta_;
  uint64_t expected = meta.byte_size();
  if (byte_len != expected) {
    complete(Status(StatusCode::kMalformedMessage,
                    "content write for '" + name_ + "' carried " + std::to_string(byte_len) +
                        " bytes, expected " + std::to_string(expected)),
             {});
    finish(/*discard=*/false);
    return;
  }
  Tensor tensor;
  tensor.dtype = meta.data_type;
  tensor.shape = meta.tensor_shape;
  tensor.is_dead = meta.is_dead;
  Layout layout = layout_of(meta);
  if (layout == Layout::kDead) {
    env_.stats().count(TfVerbsPath::kDeadTensorReceived);
    complete(Status::ok(), std::move(tensor));
    finish(false);
    return;
  }
  if (layout == Layout::kString) {
    deliver_strings(std::move(tensor), meta);
    return;
  }
  if (proxy_) {
    copy_out_of_proxy(std::move(tensor), expected);
    return;
  }
  TW_ASSERT_MSG(result_.has_value(), "an allocated request has a destination");
  tensor.buffer = result_->buffer;
  result_.reset();  // the caller owns it now, until release()
  complete(Status::ok(), std::move(tensor));
  finish(false);
}

void RdmaTensorRequest::deliver_strings(Tensor tensor, const RdmaTensorMetaData& meta) {
  const uint64_t expected = meta.byte_size();
  uint64_t elements = meta.tensor_shape.num_elements().value_or(0);
  MemorySpace& memory = env_.env().memory;
  ++env_.stats().cpu_copies;
  env_.stats().count(TfVerbsPath::kStringDeserialized);
  TW_ASSERT(result_.has_value());
  if (memory.holds_payload()) {
    std::span<std::byte> view = memory.host_view(result_->buffer);
    if (view.size() < expected) {
      // allocate() sized the proto buffer to the meta-data, and a memory
      // holding payload views all of a host buffer: only the planted bug that
      // keeps the old buffer for new meta-data gets here. It stays an error
      // value so that the model checker reports that bug instead of aborting.
      TW_ASSERT(env_.options().planted_bug == PlantedBug::kNoReallocOnSizeChange);
      complete(Status(StatusCode::kInternal, "proto buffer has no host view"), {});
      finish(false);
      return;
    }
    auto strings = wire::deserialize_strings(view.first(expected), elements);
    if (!strings.is_ok()) {
      complete(Status(StatusCode::kMalformedMessage,
                      "string tensor '" + name_ + "': " + strings.status().message()),
               {});
      finish(false);
      return;
    }
    tensor.strings = std::move(*strings);
  } else {
    tensor.strings.assign(elements, std::string());  // timing-only: sizes, no bytes
  }
  complete(Status::ok(), std::move(tensor));
  finish(false);
}

void RdmaTensorRequest::copy_out_of_proxy(Tensor tensor, uint64_t expected) {
  // A GPU the NIC cannot reach: the content landed in the host proxy.
  TW_ASSERT(proxy_.has_value() && device_result_.has_value());
  if (expected == 0) {
    tensor.buffer = *device_result_;
    device_result_.reset();  // the caller owns it now
    complete(Status::ok(), std::move(tensor));
    finish(false);
    return;
  }
  set_state(State::kCopying);
  ++env_.stats().device_copies;
  env_.stats().count(TfVerbsPath::kHostProxy);
  auto on_done = env_.request_callback(
      request_index_, [](RdmaTensorRequest& r, Status st) { r.on_copy_done(std::move(st)); });
  Status st = env_.env().copy_engine.submit(*device_result_, 0, proxy_->buffer, 0, expected,
                                            on_done);
  if (!st.is_ok()) {
    complete(st, {});
    finish(false);
    return;
  }
  if (env_.options().planted_bug == PlantedBug::kFreeProxyBeforeCopy) {
    // Freed while the copy engine still reads it.
    env_.memory_mgr().discard(proxy_->buffer);
  }
}

void RdmaTensorRequest::on_copy_done(Status status) {
  if (state_ != State::kCopying) return;
  TW_ASSERT_MSG(proxy_.has_value() && allocated_meta_.has_value(), "a copy out of the proxy runs");
  RdmaMemoryMgr& mgr = env_.memory_mgr();
  if (fail_after_copy_) {
    mgr.discard(proxy_->buffer);
  } else {
    mgr.release_registered(proxy_->buffer);
  }
  proxy_.reset();
  if (!done_delivered() && status.is_ok()) {
    TW_ASSERT(device_result_.has_value());
    Tensor tensor;
    tensor.dtype = allocated_meta_->data_type;
    tensor.shape = allocated_meta_->tensor_shape;
    tensor.buffer = *device_result_;
    device_result_.reset();
    complete(Status::ok(), std::move(tensor));
  } else {
    complete(std::move(status), {});
  }
  finish(false);
}

void RdmaTensorRequest::RecvErrorStatus(const Status& error) {
  if (state_ == State::kWithdrawn) {
    finish(/*discard=*/false);
    return;
  }
  if (state_ != State::kRequested && state_ != State::kReRequested) {
    ++env_.stats().protocol_errors;
    return;
  }
  // The rendezvous turns an ERROR_STATUS that carries OK (a peer's bytes)
  // into kInternal before it gets here.
  TW_ASSERT_MSG(!error.is_ok(), "an ERROR_STATUS fails the request");
  complete(error, {});
  finish(false);
}

void RdmaTensorRequest::Abort(Status why) {
  switch (state_) {
    case State::kIdle:
      complete(std::move(why), {});
      finish(false);
      return;
    case State::kRequested:
    case State::kReRequested:
      fail_and_withdraw(std::move(why));
      return;
    case State::kCopying:
      complete(std::move(why), {});  // resources go when the copy completes
      return;
    case State::kWithdrawn:
    case State::kFinished:
      return;
  }
}

void RdmaTensorRequest::fail_and_withdraw(Status why) {
  complete(std::move(why), {});
  // A TENSOR_RE_REQUEST without a destination withdraws the request. Keep the
  // destination (and request_index) until the peer confirms.
  wire::RdmaMessage m = make_message(wire::RdmaMessageType::kTensorReRequest);
  m.remote_addr = 0;
  m.rkey = 0;
  // The sender may be writing into the destination right now.
  if (env_.options().planted_bug == PlantedBug::kFreeOnWithdraw) release_buffers(/*discard=*/true);
  Status st = env_.send_control(src_, m);
  if (!st.is_ok()) {
    finish(/*discard=*/true);
    return;
  }
  env_.stats().count(TfVerbsPath::kWithdrawal);
  set_state(State::kWithdrawn);
}

void RdmaTensorRequest::Fail(Status why) {
  complete(std::move(why), {});
  if (state_ == State::kCopying) {
    fail_after_copy_ = true;
    return;
  }
  if (state_ != State::kFinished) finish(/*discard=*/true);
}

void RdmaTensorRequest::complete(Status status, Tensor tensor) {
  if (done_delivered()) return;
  if (timer_) {
    env_.env().clock.cancel(*timer_);
    timer_.reset();
  }
  if (status.is_ok()) {
    ++env_.stats().recvs_completed;
  } else {
    ++env_.stats().recvs_failed;
    env_.env().trace.instant(env_.trace_track(), "recv failed", env_.env().clock.now_ns(),
                             name_ + ": " + status.to_string());
  }
  completion_ = Completion{std::move(done_), std::move(status), std::move(tensor)};
  TW_ASSERT(done_delivered());
}

void RdmaTensorRequest::finish(bool discard) {
  release_buffers(discard);
  if (timer_) {
    env_.env().clock.cancel(*timer_);
    timer_.reset();
  }
  set_state(State::kFinished);
}

}  // namespace tensorwire::tf_verbs

namespace tensorwire::tf_verbs {

void RdmaTensorRequest::set_state(State next) {
  static_assert(static_cast<size_t>(State::kFinished) + 1 == RendezvousStats::kRequestStates,
                "the transition table counts every state");
  const size_t from = static_cast<size_t>(state_);
  const size_t to = static_cast<size_t>(next);
  TW_ASSERT_MSG(request_transition_allowed(from, to), "a transition outside the state machine's table");
  env_.stats().request_transitions[from][to] += 1;
  state_ = next;
}


void RdmaTensorRequest::digest(StateDigest& d) const {
  d.add(request_index_).add(src_).add(name_).add(step_id_);
  d.add(static_cast<uint64_t>(args_.dst_kind)).add(args_.dst_device);
  d.add(static_cast<uint64_t>(state_)).add(fail_after_copy_ ? 1 : 0);
  d.add(allocated_meta_.has_value() ? 1 : 0);
  if (allocated_meta_) allocated_meta_->digest(d);
  digest_buffer(d, result_);
  d.add(device_result_.has_value() ? 1 : 0);
  if (device_result_) digest_buffer(d, *device_result_);
  digest_buffer(d, proxy_);
  d.add(timer_.has_value() ? 1 : 0);
  d.add(completion_.has_value() ? 1 + static_cast<uint64_t>(completion_->status.code()) : 0);
  d.add(completion_taken_ ? 1 : 0);
}

}  // namespace tensorwire::tf_verbs
