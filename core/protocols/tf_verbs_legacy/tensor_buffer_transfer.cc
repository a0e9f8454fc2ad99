// The tensor buffers: the sender's transmission (seed 004's SendNextItem and
// PostCopyOperations: the copy of each tensor into its registered buffer,
// deferral while the buffer is busy or not yet allocated, BUFFER_REQUEST when
// it must grow) and the receiver's copy out (the callback of a TENSOR_WRITE,
// then BUFFER_IDLE). A GPU tensor goes through host staging on both sides:
// the seed's buffers are host memory, GPUDirect or not.
#include <memory>
#include <utility>

#include "core/assert.h"
#include "core/protocols/tf_verbs_legacy/legacy_rendezvous.h"

namespace tensorwire::tf_legacy {

RdmaMessage LegacyRendezvous::header_of(const TensorItem& item, RdmaMessageType type) {
  RdmaMessage m;
  m.type = type;
  m.name = item.name;
  m.step_id = item.step_id;
  m.is_dead = item.tensor.is_dead;
  m.data_type = item.tensor.dtype;
  m.tensor_shape = item.tensor.shape;
  m.tensor_bytes = item.tensor.is_dead ? 0 : item.tensor.total_bytes();
  return m;
}

// Pops the next tensor id: it takes its tensor from the local table, or
// waits there for the application's Send.
void LegacyRendezvous::send_next_item(RdmaChannel& ch, RdmaTensorBuffer& tb) {
  while (!ch.failed() && !tb.current && !tb.queue.empty()) {
    // A tensor id put back (deferred, or waiting for BUFFER_RESPONSE) waits
    // for the buffer to be idle on both sides, whatever else arrives first
    // (a later step's TENSOR_REQUEST, after an abort).
    const ItemState head = tb.queue.front().state;
    const bool put_back = head == ItemState::kDeferred || head == ItemState::kBufferRequested;
    const bool idle = tb.local == BufferStatus::kIdle && tb.remote == BufferStatus::kIdle;
    if (put_back && tb.local != BufferStatus::kNone && !idle) return;
    tb.current = std::move(tb.queue.front());
    tb.queue.pop_front();
    TensorItem& item = *tb.current;
    Key key{item.name, item.step_id};
    if (!item.has_tensor) {
      auto aborted = aborted_steps_.find(item.step_id);
      auto failed = failed_sends_.find(key);
      if (aborted != aborted_steps_.end() || failed != failed_sends_.end()) {
        abandon_current(ch, tb, aborted != aborted_steps_.end() ? aborted->second : failed->second);
        continue;
      }
      auto s = sends_.find(key);
      if (s == sends_.end()) {
        waiting_[key] = ch.peer();
        return;
      }
      item.has_tensor = true;
      item.tensor = std::move(s->second.tensor);
      item.done = std::move(s->second.done);
      sends_.erase(s);
      stats_.path(LegacyPath::kSendBeforeRecv);
    }
    // Once: a tensor id put back (deferred) waits for the next trigger.
    return post_copy(ch, tb);
  }
}

// The seed's PostCopyOperations: allocate (or grow) the buffer first, write
// when both sides are idle, otherwise put the tensor id back.
void LegacyRendezvous::post_copy(RdmaChannel& ch, RdmaTensorBuffer& tb) {
  TW_ASSERT(tb.current && tb.current->has_tensor);
  TensorItem& item = *tb.current;
  const uint64_t bytes = item.tensor.is_dead ? 0 : item.tensor.total_bytes();
  const bool idle = tb.local == BufferStatus::kIdle && tb.remote == BufferStatus::kIdle;
  const bool grows = bytes > tb.content.length;
  // The seed grows a buffer only when it is idle on both sides.
  const bool may_grow = idle || options_.planted_bug == PlantedBug::kReallocWhileWritePending;
  if (tb.local == BufferStatus::kNone || (grows && may_grow)) return request_buffer(ch, tb, bytes);
  if (idle) return transmit(ch, tb);
  ++stats_.deferrals;
  stats_.path(LegacyPath::kDeferredBusy);
  stats_.item_moved(item.state, ItemState::kDeferred);
  item.state = ItemState::kDeferred;
  tb.queue.push_front(std::move(item));
  tb.current.reset();
}

void LegacyRendezvous::request_buffer(RdmaChannel& ch, RdmaTensorBuffer& tb, uint64_t bytes) {
  TensorItem& item = *tb.current;
  const bool first = tb.content.length == 0;
  stats_.path(first ? LegacyPath::kFirstBufferRequest : LegacyPath::kBufferGrows);
  if (!first) ++stats_.reallocations;
  if (Status s = ch.grow_tx(tb, bytes); !s.is_ok()) {
    // The old buffer is gone (grow_tx freed it first): the next tensor asks anew.
    tb.local = BufferStatus::kNone;
    tb.remote = BufferStatus::kNone;
    abandon_current(ch, tb, s);
    return send_next_item(ch, tb);
  }
  tb.local = BufferStatus::kIdle;
  tb.remote = BufferStatus::kNone;  // until BUFFER_RESPONSE
  RdmaMessage m = header_of(item, RdmaMessageType::kBufferRequest);
  m.buffer_size = tb.content.length;
  m.remote_addr = tb.content.addr;
  m.rkey = tb.region.rkey;
  stats_.item_moved(item.state, ItemState::kBufferRequested);
  item.state = ItemState::kBufferRequested;
  tb.queue.push_front(std::move(item));
  tb.current.reset();
  ch.send_message(std::move(m));
}

void LegacyRendezvous::transmit(RdmaChannel& ch, RdmaTensorBuffer& tb) {
  TensorItem& item = *tb.current;
  tb.local = BufferStatus::kBusy;
  tb.remote = BufferStatus::kBusy;
  stats_.item_moved(item.state, ItemState::kCopying);
  item.state = ItemState::kCopying;
  const Tensor& t = item.tensor;
  const uint64_t bytes = t.is_dead ? 0 : t.total_bytes();
  TW_ASSERT(bytes <= tb.content.length && bytes <= tb.remote_size);
  if (bytes == 0) {
    stats_.path(LegacyPath::kDeadOrEmpty);
    return copy_in(ch, tb, Buffer{});
  }
  if (is_host(t.buffer.kind)) return copy_in(ch, tb, t.buffer);
  Result<Buffer> staging = env_.memory.allocate(MemoryKind::kHostPinned, 0, bytes);
  if (!staging) return give_up_copy(ch, tb, staging.status());
  stats_.path(LegacyPath::kSourceStaging);
  ++stats_.engine_copies;
  ++copies_in_flight_;
  const Buffer host = *staging;
  RdmaChannel* chp = &ch;
  RdmaTensorBuffer* tbp = &tb;
  const uint64_t step_id = item.step_id;
  Status submitted = env_.copy_engine.submit(host, 0, t.buffer, 0, bytes, [this, chp, tbp, host, step_id](Status s) {
    --copies_in_flight_;
    // The step was aborted during the copy: the protocol still held the
    // tensor, so it is not written (abort_step fails what the rank holds).
    if (auto aborted = aborted_steps_.find(step_id); s.is_ok() && aborted != aborted_steps_.end()) {
      s = aborted->second;
    }
    if (s.is_ok() && !chp->failed()) copy_in(*chp, *tbp, host);
    env_.memory.free(host);
    if (!s.is_ok() && !chp->failed()) give_up_copy(*chp, *tbp, s);
    if (chp->failed() && tbp->current) {
      fail_item(*tbp->current, chp->failure());
      tbp->current.reset();
    }
    settle(chp->peer());
  });
  TW_ASSERT_MSG(submitted.is_ok(), "a copy between live buffers is accepted");
}

// The copy into the buffer could not be made: nothing was written, so the
// buffer is idle again, and the receiver is told.
void LegacyRendezvous::give_up_copy(RdmaChannel& ch, RdmaTensorBuffer& tb, const Status& why) {
  tb.local = BufferStatus::kIdle;
  tb.remote = BufferStatus::kIdle;
  abandon_current(ch, tb, why);
  send_next_item(ch, tb);
}

// The copy into the registered tensor buffer; the caller's tensor is free after it.
void LegacyRendezvous::copy_in(RdmaChannel& ch, RdmaTensorBuffer& tb, const Buffer& source) {
  TensorItem& item = *tb.current;
  const uint64_t bytes = item.tensor.is_dead ? 0 : item.tensor.total_bytes();
  if (bytes > 0) {
    Status s = env_.memory.cpu_copy(tb.content, 0, source, 0, bytes);
    TW_ASSERT_MSG(s.is_ok(), "the buffer was sized for the tensor");
    ++stats_.cpu_copies;
  }
  if (item.done) std::exchange(item.done, {})(Status::ok());
  write_out(ch, tb);
}

void LegacyRendezvous::write_out(RdmaChannel& ch, RdmaTensorBuffer& tb) {
  TensorItem& item = *tb.current;
  RdmaMessage header = header_of(item, RdmaMessageType::kTensorWrite);
  header.buffer_size = header.tensor_bytes;
  stats_.item_moved(item.state, ItemState::kWriting);
  item.state = ItemState::kWriting;
  TW_ASSERT_MSG(!tb.in_write, "one write per tensor buffer: it was busy on both sides");
  tb.in_write = std::move(item);
  tb.current.reset();
  if (Status s = ch.post_tensor_write(tb, header); !s.is_ok()) fail_channel(ch.peer(), s);
}

void LegacyRendezvous::tensor_written(RdmaChannel& ch, uint32_t index, const Completion& c) {
  TW_ASSERT(ch.writes_in_flight > 0);
  --ch.writes_in_flight;
  if (ch.failed()) return;  // its item failed with the channel
  if (c.status != CompletionStatus::kSuccess) {
    return fail_channel(ch.peer(), Status(StatusCode::kQpError,
                                          std::string("tf_verbs_legacy: tensor write to rank ") +
                                              std::to_string(ch.peer()) + ": " +
                                              completion_status_name(c.status)));
  }
  for (auto& [name, tb] : ch.tx_buffers()) {
    if (tb.index != index || !tb.in_write) continue;
    stats_.item_moved(ItemState::kWriting, ItemState::kDone);
    tb.in_write.reset();
    tb.local = BufferStatus::kIdle;
    return send_next_item(ch, tb);
  }
  TW_UNREACHABLE("a content write completes for a tensor buffer that posted it");
}

// A TENSOR_WRITE landed: the header from its slot, checked against the
// buffer it names and the bytes that arrived; then the callback.
Status LegacyRendezvous::on_tensor_write(RdmaChannel& ch, uint32_t index, uint32_t byte_len) {
  const std::string where = "tf_verbs_legacy: tensor write from rank " + std::to_string(ch.peer());
  RxTensorBuffer* rx = ch.rx_by_index(index);
  if (rx == nullptr) {
    return Status(StatusCode::kMalformedMessage, where + ": no tensor buffer " + std::to_string(index));
  }
  std::span<const std::byte> slot = ch.rx_header(index);
  Result<size_t> size = framed_size(slot);
  if (!size) return size.status();
  Result<RdmaMessage> m = decode(slot.first(*size));
  if (!m) return m.status();
  const uint64_t expected = m->tensor_bytes > 0 ? m->tensor_bytes : *size;
  if (m->type != RdmaMessageType::kTensorWrite || m->name != rx->name ||
      m->tensor_bytes > rx->content.length || byte_len != expected) {
    return Status(StatusCode::kMalformedMessage,
                  where + ": the header of buffer " + rx->name + " says " +
                      message_type_name(m->type) + " " + m->name + " of " +
                      std::to_string(m->tensor_bytes) + " bytes; " + std::to_string(byte_len) +
                      " bytes arrived into a buffer of " + std::to_string(rx->content.length));
  }
  ++stats_.received[message_type_index(RdmaMessageType::kTensorWrite)];
  auto it = callbacks_.find(RecvKey{ch.peer(), m->name, m->step_id});
  if (it == callbacks_.end()) {
    stats_.path(LegacyPath::kWriteForGoneRecv);
    ++stats_.unexpected;
    copy_out(ch, *rx, *m, PendingRecv{});
    return {};
  }
  PendingRecv recv = std::move(it->second);
  callbacks_.erase(it);
  copy_out(ch, *rx, *m, std::move(recv));
  return {};
}

// Out of the tensor buffer (a host tensor, or host staging for a GPU), then
// BUFFER_IDLE gives the buffer back; a GPU copy follows.
void LegacyRendezvous::copy_out(RdmaChannel& ch, RxTensorBuffer& rx, const RdmaMessage& header,
                                PendingRecv recv) {
  const uint64_t bytes = header.tensor_bytes;
  const bool to_gpu = is_device(recv.args.dst_kind) && bytes > 0;
  Result<Buffer> host = Status(StatusCode::kInternal, "no Recv");
  if (recv.done) {
    host = to_gpu ? env_.memory.allocate(MemoryKind::kHostPinned, 0, bytes)
                  : env_.memory.allocate(recv.args.dst_kind,
                                         is_device(recv.args.dst_kind) ? recv.args.dst_device : 0,
                                         bytes);
  }
  if (host.is_ok() && bytes > 0) {
    Status s = env_.memory.cpu_copy(*host, 0, rx.content, 0, bytes);
    TW_ASSERT_MSG(s.is_ok(), "the header was checked against the buffer");
    ++stats_.cpu_copies;
  }
  ch.release_rx(rx);
  RdmaMessage idle;
  idle.type = RdmaMessageType::kBufferIdle;
  idle.name = rx.name;
  ch.send_message(std::move(idle));
  if (!recv.done) return;
  const RankId src = ch.peer();
  Tensor t;
  t.dtype = header.data_type;
  t.shape = header.tensor_shape;
  t.is_dead = header.is_dead;
  if (!host) return deliver(src, std::move(recv), host.status(), {}, RecvState::kRequested);
  if (!to_gpu) {
    t.buffer = *host;
    return deliver(src, std::move(recv), {}, t, RecvState::kRequested);
  }
  Result<Buffer> dst = env_.memory.allocate(recv.args.dst_kind, recv.args.dst_device, bytes);
  if (!dst) {
    env_.memory.free(*host);
    return deliver(src, std::move(recv), dst.status(), {}, RecvState::kRequested);
  }
  t.buffer = *dst;
  stats_.path(LegacyPath::kDestinationStaging);
  stats_.recv_moved(RecvState::kRequested, RecvState::kCopyingOut);
  ++stats_.engine_copies;
  ++copies_in_flight_;
  const Buffer staged = *host;
  auto shared = std::make_shared<PendingRecv>(std::move(recv));
  Status submitted = env_.copy_engine.submit(*dst, 0, staged, 0, bytes, [this, src, staged, shared, t](Status s) {
    --copies_in_flight_;
    env_.memory.free(staged);
    if (!s.is_ok()) env_.memory.free(t.buffer);
    deliver(src, std::move(*shared), s, s.is_ok() ? t : Tensor{}, RecvState::kCopyingOut);
    settle(src);
  });
  TW_ASSERT_MSG(submitted.is_ok(), "a copy between live buffers is accepted");
}

}  // namespace tensorwire::tf_legacy
