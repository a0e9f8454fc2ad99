// The seed's RdmaAdapter: every completion of this rank, and the actions
// upon completing each RDMA message (seed 004's table):
//   ACK             sender: ACK buffer idle.  receiver: message buffer's remote side idle, next item.
//   BUFFER_IDLE     sender: message buffer idle, next.  receiver: ACK, tensor buffer's remote side idle, next.
//   BUFFER_REQUEST  sender: as above.  receiver: ACK, find or create the tensor buffer, BUFFER_RESPONSE.
//   BUFFER_RESPONSE sender: as above.  receiver: ACK, remote buffer info, local and remote idle, next.
//   TENSOR_REQUEST  sender: as above.  receiver: ACK, find or create the tensor buffer, enqueue, next.
//   TENSOR_WRITE    sender: tensor buffer's local side idle, next.  receiver: run the callback.
// and the harness's seventh, not the seed's:
//   ERROR           sender: as above.  receiver: ACK, fail the Recv of (name, step_id), or the
//                   Send whose BUFFER_REQUEST the peer could not serve.
#include <algorithm>
#include <utility>

#include "core/assert.h"
#include "core/protocols/tf_verbs_legacy/legacy_rendezvous.h"
#include "core/protocols/tf_verbs_legacy/work_request_id.h"

namespace tensorwire::tf_legacy {
namespace {

Status protocol_error(RankId peer, const std::string& what) {
  return Status(StatusCode::kMalformedMessage,
                "tf_verbs_legacy: rank " + std::to_string(peer) + ": " + what);
}

}  // namespace

void LegacyRendezvous::on_completion(const Completion& c) {
  const WorkRequestId id = WorkRequestId::unpack(c.wr_id);
  TW_ASSERT_MSG(id.peer == c.peer, "a work request completes on its own peer's queue pair");
  RdmaChannel& ch = channel(id.peer);
  if (id.kind == WorkKind::kReceive) {
    if (c.status != CompletionStatus::kSuccess) {
      return fail_channel(id.peer, Status(StatusCode::kQpError,
                                          std::string("tf_verbs_legacy: receive from rank ") +
                                              std::to_string(id.peer) + ": " +
                                              completion_status_name(c.status)));
    }
    if (ch.failed()) return;
    Status s = c.opcode == CompletionOpcode::kRecv ? ch.on_setup(c.byte_len) : Status::ok();
    if (s.is_ok() && c.opcode == CompletionOpcode::kRecvRdmaWithImm) on_write_with_imm(c);
    if (s.is_ok() && !ch.failed()) s = ch.repost_receive();
    if (!s.is_ok()) {
      if (s.code() == StatusCode::kMalformedMessage) ++stats_.malformed;
      fail_channel(id.peer, s);
    }
    return settle(id.peer);
  }
  on_send_completion(c);
  if (!ch.failed()) ch.drain_pending();
  settle(id.peer);
}

void LegacyRendezvous::on_send_completion(const Completion& c) {
  const WorkRequestId id = WorkRequestId::unpack(c.wr_id);
  RdmaChannel& ch = channel(id.peer);
  if (id.kind == WorkKind::kTensorContent) return tensor_written(ch, id.index, c);
  if (c.status != CompletionStatus::kSuccess) {
    return fail_channel(id.peer, Status(StatusCode::kQpError,
                                        std::string("tf_verbs_legacy: write to rank ") +
                                            std::to_string(id.peer) + ": " +
                                            completion_status_name(c.status)));
  }
  switch (id.kind) {
    case WorkKind::kSetup:
    case WorkKind::kMessage: ch.message_written(); break;
    case WorkKind::kAck: ch.ack_written(); break;
    case WorkKind::kTensorHeader: break;  // its content write follows, in order
    default: TW_UNREACHABLE("receives and content writes are handled above");
  }
}

void LegacyRendezvous::on_write_with_imm(const Completion& c) {
  RdmaChannel& ch = channel(c.peer);
  Status s;
  if (!c.has_imm) {
    s = protocol_error(c.peer, "a write-with-immediate without its immediate");
  } else if (c.imm_data == kImmDataMessage) {
    s = on_message(ch, c.byte_len);
  } else if (c.imm_data == kImmDataAck) {
    s = on_ack(ch, c.byte_len);
  } else {
    s = on_tensor_write(ch, c.imm_data, c.byte_len);
  }
  if (!s.is_ok()) {
    if (s.code() == StatusCode::kMalformedMessage) ++stats_.malformed;
    fail_channel(c.peer, s);
  }
}

Status LegacyRendezvous::on_ack(RdmaChannel& ch, uint32_t byte_len) {
  Result<RdmaMessage> m = decode(ch.rx_ack(byte_len));
  if (!m) return m.status();
  if (m->type != RdmaMessageType::kAck) {
    return protocol_error(ch.peer(), std::string(message_type_name(m->type)) + " in the ACK buffer");
  }
  ++stats_.received[message_type_index(RdmaMessageType::kAck)];
  AuditEvent e;
  e.peer = ch.peer();
  e.kind = AuditKind::kRxBufferReleased;
  e.buffer = RxBufferKind::kAck;
  audit(e);
  e.kind = AuditKind::kAckReceived;
  audit(e);
  ch.ack_arrived();
  return {};
}

// Parses the message buffer (copying the message out), frees it with an ACK,
// then acts on the message.
Status LegacyRendezvous::on_message(RdmaChannel& ch, uint32_t byte_len) {
  Result<RdmaMessage> m = decode(ch.rx_message(byte_len));
  if (!m) return m.status();
  if (m->type == RdmaMessageType::kAck || m->type == RdmaMessageType::kTensorWrite) {
    return protocol_error(ch.peer(), std::string(message_type_name(m->type)) +
                                         " in the message buffer");
  }
  ++stats_.received[message_type_index(m->type)];
  AuditEvent e;
  e.kind = AuditKind::kRxBufferReleased;
  e.peer = ch.peer();
  e.buffer = RxBufferKind::kMessage;
  audit(std::move(e));
  ch.send_ack();
  switch (m->type) {
    case RdmaMessageType::kBufferIdle: return on_buffer_idle(ch, *m);
    case RdmaMessageType::kBufferRequest: return on_buffer_request(ch, *m);
    case RdmaMessageType::kBufferResponse: return on_buffer_response(ch, *m);
    case RdmaMessageType::kTensorRequest: on_tensor_request(ch, *m); return {};
    case RdmaMessageType::kError: on_error(ch, *m); return {};
    default: TW_UNREACHABLE("ACK and TENSOR_WRITE were refused above");
  }
}

Status LegacyRendezvous::on_buffer_idle(RdmaChannel& ch, const RdmaMessage& m) {
  RdmaTensorBuffer* tb = ch.find_tx(m.name);
  if (tb == nullptr || tb->remote != BufferStatus::kBusy) {
    return protocol_error(ch.peer(), "BUFFER_IDLE for " + m.name + ", which it was not writing");
  }
  tb->remote = BufferStatus::kIdle;
  send_next_item(ch, *tb);
  return {};
}

// The receiver of a tensor makes (or grows) its buffer and says where it is.
// When it cannot (registration failed, no slot left) the transfer fails on
// both sides, the channel lives on.
Status LegacyRendezvous::on_buffer_request(RdmaChannel& ch, const RdmaMessage& m) {
  Result<RxTensorBuffer*> rx = ch.rx_buffer_for_request(m.name);
  if (!rx) {
    refuse_buffer(ch, m, rx.status());
    return {};
  }
  if (Status s = ch.grow_rx(**rx, m.buffer_size); !s.is_ok()) {
    refuse_buffer(ch, m, s);
    return {};
  }
  RdmaMessage r = m;
  r.type = RdmaMessageType::kBufferResponse;
  r.buffer_size = (*rx)->content.length;
  r.remote_addr = (*rx)->content.addr;
  r.rkey = (*rx)->region.rkey;
  ch.send_message(std::move(r));
  return {};
}

Status LegacyRendezvous::on_buffer_response(RdmaChannel& ch, const RdmaMessage& m) {
  RdmaTensorBuffer* tb = ch.find_tx(m.name);
  if (tb == nullptr || tb->remote != BufferStatus::kNone) {
    return protocol_error(ch.peer(), "BUFFER_RESPONSE for " + m.name + ", which it did not ask");
  }
  if (m.buffer_size < tb->content.length) {
    return protocol_error(ch.peer(), "BUFFER_RESPONSE of " + std::to_string(m.buffer_size) +
                                         " bytes for " + m.name + ", which needs " +
                                         std::to_string(tb->content.length));
  }
  tb->remote_content = RemoteRegion{m.remote_addr, m.rkey};
  tb->remote_size = m.buffer_size;
  tb->local = BufferStatus::kIdle;
  tb->remote = BufferStatus::kIdle;
  send_next_item(ch, *tb);
  return {};
}

void LegacyRendezvous::refuse_buffer(RdmaChannel& ch, const RdmaMessage& m, const Status& why) {
  stats_.path(LegacyPath::kBufferRefused);
  send_error(ch, m.name, m.step_id, why);
  auto it = callbacks_.find(RecvKey{ch.peer(), m.name, m.step_id});
  if (it == callbacks_.end()) return;  // aborted meanwhile
  PendingRecv recv = std::move(it->second);
  callbacks_.erase(it);
  deliver(ch.peer(), std::move(recv), why, {}, RecvState::kRequested);
}

// The peer's end of (name, step_id) failed: this rank's Recv of it fails, or,
// when the peer could not make the buffer this rank asked for, the Send
// waiting for it (the buffer is asked for again by the next tensor).
void LegacyRendezvous::on_error(RdmaChannel& ch, const RdmaMessage& m) {
  const Status why(m.error_code, "tf_verbs_legacy: rank " + std::to_string(ch.peer()) + ": " +
                                     m.error_text);
  bool matched = false;
  if (auto it = callbacks_.find(RecvKey{ch.peer(), m.name, m.step_id}); it != callbacks_.end()) {
    PendingRecv recv = std::move(it->second);
    callbacks_.erase(it);
    deliver(ch.peer(), std::move(recv), why, {}, RecvState::kRequested);
    matched = true;
  }
  RdmaTensorBuffer* tb = ch.find_tx(m.name);
  if (tb != nullptr && tb->remote == BufferStatus::kNone && tb->local != BufferStatus::kNone) {
    auto item = std::find_if(tb->queue.begin(), tb->queue.end(), [&](const TensorItem& i) {
      return i.step_id == m.step_id && i.has_tensor;
    });
    if (item != tb->queue.end()) {
      TensorItem failed = std::move(*item);
      tb->queue.erase(item);
      fail_item(failed, why);
      tb->local = BufferStatus::kNone;  // the next tensor asks for a buffer again
      send_next_item(ch, *tb);
      matched = true;
    }
  }
  if (!matched) ++stats_.unexpected;  // its Recv was aborted meanwhile
}

void LegacyRendezvous::on_tensor_request(RdmaChannel& ch, const RdmaMessage& m) {
  RdmaTensorBuffer& tb = ch.tx_buffer(m.name);
  TensorItem item;
  item.name = m.name;
  item.step_id = m.step_id;
  tb.queue.push_back(std::move(item));
  send_next_item(ch, tb);
}

}  // namespace tensorwire::tf_legacy
