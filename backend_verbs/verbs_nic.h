// One rank's Nic (core/nic.h) on a real RDMA device: libibverbs for memory
// registration, posting and completions; queue pairs connected by rdma_cm
// (rdma_cm_mesh.h). Built connected by connect_verbs_nic (verbs_nic_factory.h).
//
// Semantics match the simulator's (backend_sim/) where verbs leave a choice:
// - A post beyond send_queue_depth() outstanding work requests on a queue
//   pair answers kNoResource; so does a post that would overflow the shared
//   completion queue. Every send work request is signalled, so the count of
//   outstanding ones is exact.
// - A post on a queue pair known to be in the error state answers kQpError.
// - Error completions carry only wr_id and status reliably (verbs leave the
//   opcode undefined), so each posted work request is remembered in a side
//   table: the completion reports the opcode and peer of what was posted.
//   The wr_id given to verbs is an index into that table; the protocol's own
//   wr_id comes back in the Completion.
// - Completion statuses map as in verbs_translation.h; the verbs status
//   itself (ibv_wc_status_str, vendor_err) goes to diagnostics(). One
//   correction: soft-RoCE (rxe, Linux 6.1) reports a send longer than the
//   receive it lands in as LOC_QP_OP_ERR ("malformed work request") instead
//   of LOC_LEN_ERR. A receive this NIC posted is malformed in no other way
//   when its buffer lies in a live region of ours with local write, so such a
//   receive error reads as kLocalLengthError, as on other HCAs and the
//   simulator.
// - queue_pair_state() is kError once an error completion, an asynchronous
//   event or a disconnect says so, or when the queue pair reports IBV_QPS_ERR.
// - Small sends and writes go inline (IBV_SEND_INLINE) when the queue pair
//   allows it and the source lies in a region this NIC registered: inline
//   data is copied by the CPU at post time and never checked against the
//   lkey, so without that check a wrong lkey would pass here and fail on the
//   simulator (and an unregistered address would be read by the CPU).
//
// Threading: none inside. The owner drives progress() (or
// wait_for_completions()) from the rank's one progress loop; completion
// handlers run inside it and may post. Not thread-safe: one thread at a time.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend_verbs/rdma_cm_mesh.h"
#include "backend_verbs/verbs_device.h"
#include "core/nic.h"

namespace tensorwire::verbs {

class VerbsNic final : public Nic {
 public:
  // Takes the device and the connected mesh (connect_all done).
  VerbsNic(std::unique_ptr<VerbsDevice> device, std::unique_ptr<RdmaCmMesh> mesh,
           const QpShape& shape, RankId rank, uint32_t world_size);
  ~VerbsNic() override;
  VerbsNic(const VerbsNic&) = delete;
  VerbsNic& operator=(const VerbsNic&) = delete;

  // Nic
  RankId rank() const override { return rank_; }
  uint32_t world_size() const override { return world_size_; }
  QpHandle queue_pair_to(RankId peer) const override { return QpHandle{peer + 1}; }
  QpState queue_pair_state(QpHandle qp) const override;
  uint32_t send_queue_depth() const override { return shape_.send_queue_depth; }
  Result<MemoryRegion> register_memory(const Buffer& buffer, Access access) override;
  Status deregister_memory(const MemoryRegion& region) override;
  Status post_send(QpHandle qp, const SendWorkRequest& wr) override;
  Status post_recv(QpHandle qp, const RecvWorkRequest& wr) override;
  void set_completion_handler(CompletionHandler handler) override;

  // Polls the completion queue without blocking and hands every completion
  // to the handler, in order; also reads asynchronous and rdma_cm events.
  // Returns how many completions were handed over. Not reentrant: a handler
  // must not call it.
  Result<uint32_t> progress();

  // progress(), waiting up to `timeout` for at least one completion: asleep
  // in the completion channel when the device was set up with one, polling
  // otherwise. Returns 0 at the timeout, and at once (0 completions) when one
  // of `also_wake_on` becomes readable (only in the completion channel; the
  // polling wait returns within its own timeout anyway).
  Result<uint32_t> wait_for_completions(std::chrono::milliseconds timeout,
                                        std::span<const int> also_wake_on = {});

  // Receive work requests a queue pair holds; a post beyond is kNoResource.
  uint32_t receive_queue_depth() const { return shape_.recv_queue_depth; }
  // Bytes a send or write may carry inline on the queue pair to `peer`.
  uint32_t max_inline_data_to(RankId peer) const;
  const std::string& device_name() const { return device_->name(); }
  // Set up with a completion channel: wait_for_completions sleeps in it.
  bool uses_completion_channel() const { return device_->uses_completion_channel(); }
  const DeviceLimits& device_limits() const { return device_->limits(); }
  // The rdma_cm address this rank accepted connections on.
  launch::Ipv4Endpoint endpoint() const { return mesh_->endpoint(); }

  // Fault injection for tests (VerbsNicOptions::qp_error_after_posts): the
  // queue pair of the Nth send-side work request posted from now on (sends,
  // writes, reads; receives do not count) is moved to the error state right
  // after that post (ibv_modify_qp to IBV_QPS_ERR), so what is outstanding on
  // it is flushed with errors, and its connection is dropped (rdma_disconnect)
  // so the peer's end goes to the error state too: both ends fail, as with the
  // simulator's qp_error fault. 0: never.
  void inject_qp_error_after_posts(uint64_t n) {
    qp_error_after_posts_ = n;
    sends_posted_ = 0;
  }

  // Error completions, asynchronous events and disconnects in verbs' own words
  // ("rank 0: rdma write to rank 1 (wr_id 7) failed: remote access error
  // (IBV_WC_REM_ACCESS_ERR, vendor_err 0x0)"), oldest first, the last 64.
  const std::deque<std::string>& diagnostics() const { return diagnostics_; }

 private:
  // ibv_reg_dmabuf_mr on the device range's dmabuf, else ibv_reg_mr on the
  // device pointer (nvidia-peermem).
  Result<ibv_mr*> register_device_memory(const Buffer& buffer, int flags);
  enum class WorkKind : uint8_t { kSend, kRdmaWrite, kRdmaWriteWithImm, kRdmaRead, kRecv };
  // What a posted work request was, kept until its completion.
  struct Outstanding {
    uint64_t wr_id = 0;
    RankId peer = 0;
    WorkKind kind = WorkKind::kSend;
    uint32_t length = 0;
    uint64_t addr = 0;  // the local sge, to judge a receive's error (see translate)
    uint32_t lkey = 0;
    bool in_use = false;
  };
  struct PeerQp {
    ibv_qp* qp = nullptr;
    uint32_t max_inline_data = 0;
    uint32_t sends_outstanding = 0;
    uint32_t recvs_outstanding = 0;
    // Once true, stays true: an RC queue pair never leaves the error state.
    mutable bool in_error = false;
  };
  struct Registered {
    ibv_mr* mr = nullptr;  // null for a zero-length region
    MemoryRegion region;
  };

  Result<RankId> peer_of(QpHandle qp, const char* call) const;
  Result<uint64_t> take_slot(RankId peer, WorkKind kind, uint64_t wr_id, const Sge& local);
  void release_slot(uint64_t slot);
  bool may_inline(const SendWorkRequest& wr, const PeerQp& peer) const;
  Result<Completion> translate(const ibv_wc& wc);
  // Frees the slot of a completed work request and counts it off its queue
  // pair: what was posted there, or an error for a slot nothing was posted in.
  Result<Outstanding> retire(uint64_t slot);
  static CompletionOpcode completion_opcode(WorkKind kind, bool ok, const ibv_wc& wc);
  // Notes a successful completion that came on another queue pair than its
  // work request's.
  void note_foreign_qp(const ibv_wc& wc, const Outstanding& posted) const;
  // Notes a failed work request in verbs' words (not its flushes) and moves
  // its queue pair to the error state.
  void note_failure(const ibv_wc& wc, const Outstanding& posted, CompletionStatus reported) const;
  bool receive_buffer_is_sound(const Outstanding& posted) const;
  void mark_error(RankId peer, const std::string& why) const;
  // The injected fault: the queue pair to `peer` to IBV_QPS_ERR, then disconnected.
  void force_qp_error(RankId peer);
  Status poll_side_events();
  void note(std::string line) const;

  std::unique_ptr<VerbsDevice> device_;
  std::unique_ptr<RdmaCmMesh> mesh_;
  QpShape shape_;
  RankId rank_;
  uint32_t world_size_;
  std::vector<PeerQp> peers_;  // index = rank
  std::unordered_map<uint32_t, RankId> peer_of_qp_num_;
  std::vector<Outstanding> slots_;
  std::vector<uint64_t> free_slots_;
  uint32_t outstanding_total_ = 0;
  uint32_t completion_queue_capacity_ = 0;
  // By lkey. Zero-length regions are kept apart: they have no ibv_mr.
  std::unordered_map<uint32_t, Registered> regions_;
  std::unordered_map<uint64_t, uint32_t> zero_length_regions_;  // addr -> count
  CompletionHandler handler_;
  bool in_progress_ = false;
  // Asynchronous and rdma_cm events cost a system call each to look for, so
  // a busy progress loop looks at most once a millisecond.
  std::chrono::steady_clock::time_point next_side_event_check_{};
  mutable std::deque<std::string> diagnostics_;
  uint64_t qp_error_after_posts_ = 0;  // 0: no injected fault
  uint64_t sends_posted_ = 0;
};

}  // namespace tensorwire::verbs
