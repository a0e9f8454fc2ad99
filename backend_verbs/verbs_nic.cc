#include "backend_verbs/verbs_nic.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <utility>

#include "backend_verbs/cuda_memory.h"
#include "launch/system_call_error.h"
#include "backend_verbs/verbs_translation.h"

namespace tensorwire::verbs {
namespace {

constexpr size_t kMaxDiagnostics = 64;
constexpr int kPollBatch = 16;
constexpr auto kSideEventInterval = std::chrono::milliseconds(1);

std::string access_text(int flags) {
  std::string text;
  auto add = [&](int bit, const char* name) {
    if ((flags & bit) == 0) return;
    if (!text.empty()) text += "|";
    text += name;
  };
  add(IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE");
  add(IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE");
  add(IBV_ACCESS_REMOTE_READ, "REMOTE_READ");
  return text.empty() ? "local read only" : text;
}

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

VerbsNic::VerbsNic(std::unique_ptr<VerbsDevice> device, std::unique_ptr<RdmaCmMesh> mesh,
                   const QpShape& shape, RankId rank, uint32_t world_size)
    : device_(std::move(device)),
      mesh_(std::move(mesh)),
      shape_(shape),
      rank_(rank),
      world_size_(world_size),
      peers_(world_size) {
  for (RankId p = 0; p < world_size_; ++p) {
    if (p == rank_) continue;
    peers_[p].qp = mesh_->qp_to(p);
    peers_[p].max_inline_data = mesh_->max_inline_data_to(p);
    if (peers_[p].qp != nullptr) peer_of_qp_num_.emplace(peers_[p].qp->qp_num, p);
  }
  completion_queue_capacity_ = device_->completion_queue_capacity();
  slots_.resize(completion_queue_capacity_);
  free_slots_.reserve(completion_queue_capacity_);
  for (uint64_t i = completion_queue_capacity_; i > 0; --i) free_slots_.push_back(i - 1);
}

VerbsNic::~VerbsNic() {
  // Queue pairs first (they use the PD and CQ), then memory regions, then the
  // PD and CQ, and the rdma_cm listener last: librdmacm holds the device
  // context the PD and CQ were made on.
  mesh_->close_peers();
  for (auto& [lkey, registered] : regions_) {
    if (registered.mr == nullptr) continue;
    if (const int rc = ibv_dereg_mr(registered.mr); rc != 0) {
      launch::report_teardown_failure("ibv_dereg_mr(" + device_->name() + ", lkey " + hex(lkey) + ")", rc);
    }
  }
  regions_.clear();
  device_.reset();
  mesh_.reset();
}

void VerbsNic::note(std::string line) const {
  diagnostics_.push_back(std::move(line));
  while (diagnostics_.size() > kMaxDiagnostics) diagnostics_.pop_front();
}

void VerbsNic::mark_error(RankId peer, const std::string& why) const {
  if (peer >= peers_.size() || peers_[peer].in_error) return;
  peers_[peer].in_error = true;
  note("rank " + std::to_string(rank_) + ": queue pair to rank " + std::to_string(peer) +
       " is in the error state: " + why);
}

Result<RankId> VerbsNic::peer_of(QpHandle qp, const char* call) const {
  if (qp.id == 0 || qp.id > world_size_ || qp.id - 1 == rank_) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(call) + ": no queue pair with handle " + std::to_string(qp.id));
  }
  return qp.id - 1;
}

QpState VerbsNic::queue_pair_state(QpHandle qp) const {
  Result<RankId> peer = peer_of(qp, "queue_pair_state");
  if (!peer.is_ok()) return QpState::kError;
  const PeerQp& p = peers_[*peer];
  if (p.in_error || p.qp == nullptr) return QpState::kError;
  // The responder side of a failed request, or a peer's disconnect, may
  // leave no completion here to tell; the queue pair itself knows.
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (const int rc = ibv_query_qp(p.qp, &attr, IBV_QP_STATE, &init); rc != 0) {
    note("ibv_query_qp(" + device_->name() + ", to rank " + std::to_string(*peer) +
         "): " + launch::errno_text(rc));
    return QpState::kReadyToSend;
  }
  if (attr.qp_state == IBV_QPS_ERR || attr.qp_state == IBV_QPS_SQE) {
    mark_error(*peer, "ibv_query_qp reports the error state");
    return QpState::kError;
  }
  return QpState::kReadyToSend;
}

Result<MemoryRegion> VerbsNic::register_memory(const Buffer& buffer, Access access) {
  if (!is_nic_reachable(buffer.kind)) {
    return Status(StatusCode::kInvalidArgument,
                  "register_memory: GPU " + std::to_string(buffer.device) +
                      " has no GPUDirect; the HCA cannot reach its memory (stage through a host proxy)");
  }
  if (is_device(buffer.kind) && !cuda::built()) {
    return Status(StatusCode::kUnavailable,
                  "register_memory: GPU " + std::to_string(buffer.device) + " memory (" +
                      memory_kind_name(buffer.kind) + ") needs a build with CUDA (-Dcuda=enabled)");
  }
  const int flags = access_flags_for(access);
  MemoryRegion region;
  region.addr = buffer.addr;
  region.length = buffer.length;
  region.access = access_granted_by(flags);
  region.kind = buffer.kind;
  region.device = buffer.device;
  if (buffer.length == 0) {
    // Verbs cannot register zero bytes (ibv_reg_mr answers EINVAL), and need
    // not: a zero-length transfer posts no sge and checks no key. Such a
    // region gets keys 0 and no ibv_mr.
    zero_length_regions_[buffer.addr] += 1;
    return region;
  }
  const std::string what = "ibv_reg_mr(" + device_->name() + ", " + std::to_string(buffer.length) +
                           " bytes, " + access_text(flags) + ")";
  if (buffer.addr == 0) {
    return Status(StatusCode::kInvalidArgument, what + ": the buffer has address 0");
  }
  const uint64_t max = device_->limits().max_mr_size;
  if (max > 0 && buffer.length > max) {
    return Status(StatusCode::kInvalidArgument,
                  what + ": larger than the device's max_mr_size of " + std::to_string(max));
  }
  if (is_device(buffer.kind)) {
    Result<ibv_mr*> mr = register_device_memory(buffer, flags);
    if (!mr) return mr.status();
    region.lkey = (*mr)->lkey;
    region.rkey = (*mr)->rkey;
    regions_[(*mr)->lkey] = Registered{*mr, region};
    return region;
  }
  ibv_mr* mr = ibv_reg_mr(device_->protection_domain(), reinterpret_cast<void*>(buffer.addr),
                          buffer.length, flags);
  if (mr == nullptr) {
    const int error = errno;
    Status st = launch::call_failed(what, error);
    if (error == ENOMEM) {
      return Status(StatusCode::kOutOfMemory,
                    st.message() + " (pinned memory is bounded by RLIMIT_MEMLOCK: ulimit -l)");
    }
    return st;
  }
  region.lkey = mr->lkey;
  region.rkey = mr->rkey;
  regions_[mr->lkey] = Registered{mr, region};
  return region;
}

// GPUDirect: the HCA reads and writes GPU memory itself. The kernel's way is
// a dmabuf of the device range (ibv_reg_dmabuf_mr, with the device pointer as
// the region's address); older stacks with nvidia-peermem take the device
// pointer in plain ibv_reg_mr. The error names both attempts.
Result<ibv_mr*> VerbsNic::register_device_memory(const Buffer& buffer, int flags) {
  const std::string range = std::to_string(buffer.length) + " bytes of GPU " +
                            std::to_string(buffer.device) + ", " + access_text(flags);
  std::string dmabuf_error;
  Result<cuda::DmaBufRange> dmabuf = cuda::export_dmabuf(buffer.addr, buffer.length);
  if (dmabuf) {
    ibv_mr* mr = ibv_reg_dmabuf_mr(device_->protection_domain(), dmabuf->offset, buffer.length,
                                   buffer.addr, dmabuf->fd, flags);
    const int error = errno;
    close(dmabuf->fd);  // the region holds its own reference
    if (mr != nullptr) return mr;
    dmabuf_error = launch::call_failed("ibv_reg_dmabuf_mr(" + device_->name() + ", " + range + ")", error).message();
  } else {
    dmabuf_error = dmabuf.status().message();
  }
  ibv_mr* mr = ibv_reg_mr(device_->protection_domain(), reinterpret_cast<void*>(buffer.addr),
                          buffer.length, flags);
  if (mr != nullptr) return mr;
  const int error = errno;
  return Status(StatusCode::kUnavailable,
                "GPUDirect registration failed: " + dmabuf_error + "; then " +
                    launch::call_failed("ibv_reg_mr(" + device_->name() + ", " + range + ", device pointer)", error)
                        .message() +
                    " (no dmabuf support and no nvidia-peermem)");
}

Status VerbsNic::deregister_memory(const MemoryRegion& region) {
  if (region.length == 0) {
    auto it = zero_length_regions_.find(region.addr);
    if (it == zero_length_regions_.end()) {
      return Status(StatusCode::kNotFound, "deregister_memory: no zero-length region at " +
                                               hex(region.addr) + " is registered");
    }
    if (--it->second == 0) zero_length_regions_.erase(it);
    return {};
  }
  auto it = regions_.find(region.lkey);
  if (it == regions_.end() || it->second.region.rkey != region.rkey ||
      it->second.region.addr != region.addr) {
    return Status(StatusCode::kNotFound,
                  "deregister_memory: lkey " + hex(region.lkey) + " is not registered");
  }
  if (const int rc = ibv_dereg_mr(it->second.mr); rc != 0) {
    return launch::call_failed("ibv_dereg_mr(" + device_->name() + ", lkey " + hex(region.lkey) + ")", rc);
  }
  regions_.erase(it);
  return {};
}

Result<uint64_t> VerbsNic::take_slot(RankId peer, WorkKind kind, uint64_t wr_id, const Sge& local) {
  if (free_slots_.empty()) {
    return Status(StatusCode::kNoResource,
                  "the completion queue of " + device_->name() + " holds " +
                      std::to_string(completion_queue_capacity_) +
                      " completions and as many work requests are outstanding");
  }
  const uint64_t slot = free_slots_.back();
  free_slots_.pop_back();
  slots_[slot] = Outstanding{wr_id, peer, kind, local.length, local.addr, local.lkey, true};
  outstanding_total_ += 1;
  return slot;
}

void VerbsNic::release_slot(uint64_t slot) {
  slots_[slot].in_use = false;
  free_slots_.push_back(slot);
  outstanding_total_ -= 1;
}

bool VerbsNic::may_inline(const SendWorkRequest& wr, const PeerQp& peer) const {
  if (wr.opcode == WorkOpcode::kRdmaRead) return false;  // the data flows the other way
  if (wr.local.length == 0 || wr.local.length > peer.max_inline_data) return false;
  auto it = regions_.find(wr.local.lkey);
  return it != regions_.end() && it->second.region.contains(wr.local.addr, wr.local.length);
}

Status VerbsNic::post_send(QpHandle qp, const SendWorkRequest& wr) {
  Result<RankId> peer = peer_of(qp, "post_send");
  if (!peer.is_ok()) return peer.status();
  if (static_cast<uint8_t>(wr.opcode) > static_cast<uint8_t>(WorkOpcode::kRdmaRead)) {
    return Status(StatusCode::kInvalidArgument, "post_send: unknown opcode");
  }
  PeerQp& p = peers_[*peer];
  if (p.in_error) {
    return Status(StatusCode::kQpError, "post_send: queue pair to rank " + std::to_string(*peer) +
                                            " is in the error state");
  }
  if (p.sends_outstanding >= shape_.send_queue_depth) {
    return Status(StatusCode::kNoResource,
                  "post_send: send queue to rank " + std::to_string(*peer) + " full (" +
                      std::to_string(shape_.send_queue_depth) + " work requests outstanding)");
  }
  WorkKind kind = WorkKind::kSend;
  switch (wr.opcode) {
    case WorkOpcode::kSend: kind = WorkKind::kSend; break;
    case WorkOpcode::kRdmaWrite: kind = WorkKind::kRdmaWrite; break;
    case WorkOpcode::kRdmaWriteWithImm: kind = WorkKind::kRdmaWriteWithImm; break;
    case WorkOpcode::kRdmaRead: kind = WorkKind::kRdmaRead; break;
  }
  Result<uint64_t> slot = take_slot(*peer, kind, wr.wr_id, wr.local);
  if (!slot.is_ok()) return Status(slot.status().code(), "post_send: " + slot.status().message());

  ibv_sge sge{};
  sge.addr = wr.local.addr;
  sge.length = wr.local.length;
  sge.lkey = wr.local.lkey;
  ibv_send_wr send{};
  send.wr_id = *slot;
  // A zero-length transfer posts no sge: on some HCAs an sge byte count of 0
  // means 2 GiB.
  send.sg_list = wr.local.length > 0 ? &sge : nullptr;
  send.num_sge = wr.local.length > 0 ? 1 : 0;
  send.opcode = wr_opcode_for(wr.opcode);
  send.send_flags = IBV_SEND_SIGNALED;
  if (may_inline(wr, p)) send.send_flags |= IBV_SEND_INLINE;
  if (wr.opcode != WorkOpcode::kSend) {
    send.wr.rdma.remote_addr = wr.remote_addr;
    send.wr.rdma.rkey = wr.rkey;
  }
  // The immediate travels in network byte order; the receiver undoes it.
  if (wr.opcode == WorkOpcode::kRdmaWriteWithImm) send.imm_data = htonl(wr.imm_data);
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(p.qp, &send, &bad); rc != 0) {
    release_slot(*slot);
    const std::string what = "ibv_post_send(" + device_->name() + ", " +
                             work_opcode_name(wr.opcode) +
                             " of " + std::to_string(wr.local.length) + " bytes to rank " +
                             std::to_string(*peer) + ")";
    if (rc == ENOMEM) return launch::call_failed(StatusCode::kNoResource, what, rc);
    return launch::call_failed(what, rc);
  }
  p.sends_outstanding += 1;
  if (qp_error_after_posts_ != 0 && ++sends_posted_ == qp_error_after_posts_) force_qp_error(*peer);
  return {};
}

void VerbsNic::force_qp_error(RankId peer) {
  const std::string where = device_->name() + ", to rank " + std::to_string(peer);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  if (const int rc = ibv_modify_qp(peers_[peer].qp, &attr, IBV_QP_STATE); rc != 0) {
    // Loud, so that a test of the fault fails here rather than passing on a
    // run that never had one.
    note("rank " + std::to_string(rank_) + ": injected fault failed: ibv_modify_qp(" + where +
         ", ERR): " + launch::errno_text(rc));
    return;
  }
  mark_error(peer, "injected fault: ibv_modify_qp(" + where +
                       ", IBV_QPS_ERR) after send-side work request " +
                       std::to_string(qp_error_after_posts_));
  if (Status st = mesh_->disconnect(peer); !st.is_ok()) {
    note("rank " + std::to_string(rank_) + ": injected fault: " + st.message());
  }
}

Status VerbsNic::post_recv(QpHandle qp, const RecvWorkRequest& wr) {
  Result<RankId> peer = peer_of(qp, "post_recv");
  if (!peer.is_ok()) return peer.status();
  PeerQp& p = peers_[*peer];
  if (p.in_error) {
    return Status(StatusCode::kQpError, "post_recv: queue pair to rank " + std::to_string(*peer) +
                                            " is in the error state");
  }
  if (p.recvs_outstanding >= shape_.recv_queue_depth) {
    return Status(StatusCode::kNoResource,
                  "post_recv: receive queue from rank " + std::to_string(*peer) + " full (" +
                      std::to_string(shape_.recv_queue_depth) + " work requests outstanding)");
  }
  Result<uint64_t> slot = take_slot(*peer, WorkKind::kRecv, wr.wr_id, wr.local);
  if (!slot.is_ok()) return Status(slot.status().code(), "post_recv: " + slot.status().message());
  ibv_sge sge{};
  sge.addr = wr.local.addr;
  sge.length = wr.local.length;
  sge.lkey = wr.local.lkey;
  ibv_recv_wr recv{};
  recv.wr_id = *slot;
  // A receive only consumed by write-with-imm may have no buffer at all.
  recv.sg_list = wr.local.length > 0 ? &sge : nullptr;
  recv.num_sge = wr.local.length > 0 ? 1 : 0;
  ibv_recv_wr* bad = nullptr;
  if (const int rc = ibv_post_recv(p.qp, &recv, &bad); rc != 0) {
    release_slot(*slot);
    const std::string what = "ibv_post_recv(" + device_->name() + ", " +
                             std::to_string(wr.local.length) + " bytes from rank " +
                             std::to_string(*peer) + ")";
    if (rc == ENOMEM) return launch::call_failed(StatusCode::kNoResource, what, rc);
    return launch::call_failed(what, rc);
  }
  p.recvs_outstanding += 1;
  return {};
}

void VerbsNic::set_completion_handler(CompletionHandler handler) { handler_ = std::move(handler); }

Result<VerbsNic::Outstanding> VerbsNic::retire(uint64_t slot) {
  if (slot >= slots_.size() || !slots_[slot].in_use) {
    return Status(StatusCode::kInternal, "ibv_poll_cq(" + device_->name() + ") returned wr_id " +
                                             std::to_string(slot) +
                                             ", which names no outstanding work request");
  }
  const Outstanding posted = slots_[slot];
  release_slot(slot);
  PeerQp& p = peers_[posted.peer];
  if (posted.kind == WorkKind::kRecv) {
    p.recvs_outstanding -= 1;
  } else {
    p.sends_outstanding -= 1;
  }
  return posted;
}

CompletionOpcode VerbsNic::completion_opcode(WorkKind kind, bool ok, const ibv_wc& wc) {
  switch (kind) {
    case WorkKind::kSend: return CompletionOpcode::kSend;
    case WorkKind::kRdmaWrite:
    case WorkKind::kRdmaWriteWithImm: return CompletionOpcode::kRdmaWrite;
    case WorkKind::kRdmaRead: return CompletionOpcode::kRdmaRead;
    case WorkKind::kRecv:
      // On success the opcode tells a send from a write-with-imm; on error it
      // is undefined and the receive reads as a plain one, as in the simulator.
      return ok && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM ? CompletionOpcode::kRecvRdmaWithImm
                                                          : CompletionOpcode::kRecv;
  }
  return CompletionOpcode::kSend;
}

void VerbsNic::note_foreign_qp(const ibv_wc& wc, const Outstanding& posted) const {
  auto q = peer_of_qp_num_.find(wc.qp_num);
  if (q == peer_of_qp_num_.end() || q->second != posted.peer) {
    note("rank " + std::to_string(rank_) + ": completion of wr_id " +
         std::to_string(posted.wr_id) + " came on qp_num " + std::to_string(wc.qp_num) +
         ", not on the queue pair to rank " + std::to_string(posted.peer));
  }
}

void VerbsNic::note_failure(const ibv_wc& wc, const Outstanding& posted,
                            CompletionStatus reported) const {
  const char* what = "receive";
  switch (posted.kind) {
    case WorkKind::kSend: what = "send"; break;
    case WorkKind::kRdmaWrite: what = "rdma write"; break;
    case WorkKind::kRdmaWriteWithImm: what = "rdma write with imm"; break;
    case WorkKind::kRdmaRead: what = "rdma read"; break;
    case WorkKind::kRecv: what = "receive"; break;
  }
  const std::string line =
      std::string(what) + (posted.kind == WorkKind::kRecv ? " from" : " to") + " rank " +
      std::to_string(posted.peer) + " (wr_id " + std::to_string(posted.wr_id) + ", " +
      std::to_string(posted.length) + " bytes) failed: " + ibv_wc_status_str(wc.status) + " (" +
      wc_status_enum_name(wc.status) + ", vendor_err " + hex(wc.vendor_err) + ")";
  // Flushes follow the error that caused them, one per outstanding request:
  // the first error says it all.
  if (wc.status != IBV_WC_WR_FLUSH_ERR) {
    note("rank " + std::to_string(rank_) + ": " + line + ", reported as " +
         completion_status_name(reported));
  }
  mark_error(posted.peer, std::string(wc_status_enum_name(wc.status)) + " on wr_id " +
                              std::to_string(posted.wr_id));
}

Result<Completion> VerbsNic::translate(const ibv_wc& wc) {
  Result<Outstanding> retired = retire(wc.wr_id);
  if (!retired.is_ok()) return retired.status();
  const Outstanding& posted = *retired;

  Completion c;
  c.wr_id = posted.wr_id;
  c.qp = QpHandle{posted.peer + 1};
  c.peer = posted.peer;
  c.status = completion_status_for(wc.status);
  if (posted.kind == WorkKind::kRecv && wc.status == IBV_WC_LOC_QP_OP_ERR &&
      receive_buffer_is_sound(posted)) {
    c.status = CompletionStatus::kLocalLengthError;  // rxe's word for it; see verbs_nic.h
  }
  const bool ok = wc.status == IBV_WC_SUCCESS;
  c.opcode = completion_opcode(posted.kind, ok, wc);
  if (!ok) {
    note_failure(wc, posted, c.status);
    return c;
  }
  if (posted.kind == WorkKind::kRecv) {
    c.byte_len = wc.byte_len;
    c.has_imm = (wc.wc_flags & IBV_WC_WITH_IMM) != 0;
    c.imm_data = c.has_imm ? ntohl(wc.imm_data) : 0;
  } else {
    // Verbs define byte_len for receives and reads only; the simulator
    // reports the bytes moved for every successful request, so do we.
    c.byte_len = posted.length;
  }
  note_foreign_qp(wc, posted);
  return c;
}

bool VerbsNic::receive_buffer_is_sound(const Outstanding& posted) const {
  if (posted.length == 0) return true;  // no buffer: any incoming byte is too many
  auto it = regions_.find(posted.lkey);
  return it != regions_.end() && has_access(it->second.region.access, Access::kLocalWrite) &&
         it->second.region.contains(posted.addr, posted.length);
}

Status VerbsNic::poll_side_events() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_side_event_check_) return {};
  next_side_event_check_ = now + kSideEventInterval;
  Status st = device_->drain_async_events([this](const ibv_async_event& event) {
    const char* name = ibv_event_type_str(event.event_type);
    switch (event.event_type) {
      case IBV_EVENT_QP_FATAL:
      case IBV_EVENT_QP_REQ_ERR:
      case IBV_EVENT_QP_ACCESS_ERR: {
        // Several ranks in one process share librdmacm's device context and
        // so its event queue: an event for another rank's queue pair is
        // dropped here, and that rank learns the state from ibv_query_qp.
        auto it = peer_of_qp_num_.find(event.element.qp->qp_num);
        if (it != peer_of_qp_num_.end() && peers_[it->second].qp == event.element.qp) {
          mark_error(it->second, std::string("asynchronous event: ") + name);
        }
        break;
      }
      case IBV_EVENT_DEVICE_FATAL:
        for (RankId p = 0; p < world_size_; ++p) {
          if (p != rank_) mark_error(p, std::string("asynchronous event: ") + name);
        }
        break;
      case IBV_EVENT_PORT_ERR:
        note("rank " + std::to_string(rank_) + ": asynchronous event: " + name + " (port " +
             std::to_string(event.element.port_num) + ")");
        break;
      default: break;
    }
  });
  if (!st.is_ok()) return st;
  std::vector<RankId> gone;
  if (st = mesh_->poll_events(&gone); !st.is_ok()) return st;
  for (RankId p : gone) {
    mark_error(p, "rdma_cm: the peer disconnected");
    // Flush what is still outstanding to it, as hardware does for a dead peer,
    // instead of waiting for each request's transport retries to run out.
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    if (const int rc = ibv_modify_qp(peers_[p].qp, &attr, IBV_QP_STATE); rc != 0) {
      note("ibv_modify_qp(" + device_->name() + ", to rank " + std::to_string(p) +
           ", ERR): " + launch::errno_text(rc));
    }
  }
  return {};
}

Result<uint32_t> VerbsNic::progress() {
  if (in_progress_) {
    return Status(StatusCode::kInvalidArgument,
                  "progress() called from inside a completion handler");
  }
  in_progress_ = true;
  struct Reset {
    bool* flag;
    ~Reset() { *flag = false; }
  } reset{&in_progress_};

  if (Status st = poll_side_events(); !st.is_ok()) return st;
  uint32_t handed = 0;
  Status first_error;
  ibv_wc wcs[kPollBatch];
  for (;;) {
    const int n = ibv_poll_cq(device_->completion_queue(), kPollBatch, wcs);
    if (n < 0) {
      return Status(StatusCode::kInternal, "ibv_poll_cq(" + device_->name() +
                                               "): failed (returned " + std::to_string(n) + ")");
    }
    for (int i = 0; i < n; ++i) {
      Result<Completion> c = translate(wcs[i]);
      if (!c.is_ok()) {
        if (first_error.is_ok()) first_error = c.status();
        continue;
      }
      ++handed;
      if (handler_) handler_(*c);
    }
    if (n < kPollBatch) break;
  }
  if (!first_error.is_ok()) return first_error;
  return handed;
}

Result<uint32_t> VerbsNic::wait_for_completions(std::chrono::milliseconds timeout,
                                                std::span<const int> also_wake_on) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Result<uint32_t> n = progress();
  if (!n.is_ok() || *n > 0) return n;
  if (!device_->uses_completion_channel()) {
    while (std::chrono::steady_clock::now() < deadline) {
      n = progress();
      if (!n.is_ok() || *n > 0) return n;
      std::this_thread::yield();
    }
    return 0u;
  }
  for (;;) {
    if (Status st = device_->arm_completion_queue(); !st.is_ok()) return st;
    // A completion that came before the CQ was armed raises no event.
    n = progress();
    if (!n.is_ok() || *n > 0) return n;
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return 0u;
    bool signalled = false;
    bool other_ready = false;
    if (Status st = device_->wait_for_completion_event(
            static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)), also_wake_on,
            &signalled, &other_ready);
        !st.is_ok()) {
      return st;
    }
    n = progress();
    if (!n.is_ok() || *n > 0 || other_ready) return n;
  }
}

uint32_t VerbsNic::max_inline_data_to(RankId peer) const {
  return peer < peers_.size() ? peers_[peer].max_inline_data : 0;
}

}  // namespace tensorwire::verbs
