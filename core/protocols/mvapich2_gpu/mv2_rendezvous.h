// Mv2Rendezvous: MVAPICH2-GPU's point-to-point protocol behind the Rendezvous
// seam, one per rank. A Recv sends a REQUEST (the seam's Send names no
// destination, so the receiver announces itself, where MPI_Send would know
// its peer); the sender answers with the tensor in an EAGER message (up to
// eager_max_bytes) or an RTS (tag, size, type). The receiver answers an RTS
// with a CTS naming where blocks go: the user's buffer when the NIC reaches
// it, else host vbufs. The sender writes each block (copied device-to-host
// into its own vbufs first when the NIC cannot reach its GPU) and sends a FIN
// after each write completes; the receiver copies each block to the GPU when
// its FIN arrives and offers the vbuf again in a later CTS. README.md has the
// details.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/protocols/mvapich2_gpu/eager_channel.h"
#include "core/protocols/mvapich2_gpu/mv2_audit.h"
#include "core/protocols/mvapich2_gpu/mv2_options.h"
#include "core/protocols/mvapich2_gpu/mv2_stats.h"
#include "core/protocols/mvapich2_gpu/vbuf_pool.h"
#include "core/rank_env.h"
#include "core/rendezvous.h"

namespace tensorwire::mvapich2 {

class Mv2Rendezvous final : public Rendezvous {
 public:
  Mv2Rendezvous(RankEnv env, const Mv2Options& options);
  ~Mv2Rendezvous() override;

  Status start() override;
  Status send(std::string_view name, uint64_t step_id, Tensor tensor, SendDone done) override;
  void recv(RankId src, std::string_view name, uint64_t step_id, RecvArgs args,
            RecvDone done) override;
  void abort_step(uint64_t step_id, Status why) override;
  Status fail_send(std::string_view name, uint64_t step_id, Status why) override;
  void release(const Tensor& tensor) override;
  size_t outstanding_work() const override;
  uint64_t state_digest() const override;
  ProtocolCounters counters() const override;
  std::vector<TransitionTable> transition_tables() const override;
  void add_coverage(Coverage& into) const override;

  // For the invariants and tests: where this rank reports what it does with
  // blocks, vbufs, writes and FINs (nullptr: nowhere). Const: the checker
  // gets the ranks as const; reporting changes nothing they do.
  void set_audit_sink(AuditSink* sink) const { audit_sink_ = sink; }
  RankId rank() const { return env_.nic.rank(); }
  const Mv2Stats& stats() const { return stats_; }

 private:
  using Key = std::pair<std::string, uint64_t>;               // (name, step_id)
  using RecvKey = std::tuple<RankId, std::string, uint64_t>;  // (src, name, step_id)
  using InKey = std::pair<RankId, uint32_t>;                  // (src, sender's transfer id)
  struct PendingSend {
    Tensor tensor;
    SendDone done;
  };
  struct PendingRecv {
    RecvArgs args;
    RecvDone done;
  };
  struct Peer;          // rndv_transfer.h: a peer's channel, vbuf pools, queued writes
  struct OutTransfer;   // rndv_transfer.h: a rendezvous on the sender
  struct InTransfer;    // rndv_transfer.h: a rendezvous on the receiver
  struct WriteRef {
    uint32_t transfer = 0;
    uint32_t block = 0;
  };

  // mv2_rendezvous.cc: seam, matching, the eager path, failures.
  void on_completion(const Completion& c);
  void install_handlers(EagerChannel& ch);
  void on_request(const Arrival& a);
  void on_eager(const Arrival& a);
  void on_error(const Arrival& a);
  void serve(RankId peer, const Key& key, PendingSend send);
  void serve_eager(RankId peer, const Key& key, PendingSend send);
  void send_eager(RankId peer, const Key& key, const Tensor& t, Buffer content);
  // `transfer` != 0: ends that rendezvous at the peer (`from_sender`: it is
  // this rank's; otherwise the peer's, refused by this rank as receiver).
  void send_error(RankId peer, const Key& key, const Status& why, uint32_t transfer = 0,
                  bool from_sender = false);
  void deliver(PendingRecv recv, Status status, Tensor tensor, RecvState from);
  Result<Buffer> allocate(MemoryKind kind, uint32_t device, uint64_t bytes);
  void free_buffer(const Buffer& b);
  void check_channel(RankId peer);
  void audit(AuditEvent e) const {
    if (audit_sink_ != nullptr) audit_sink_->on_audit(rank(), e);
  }
  void fail_peer(RankId peer, const Status& why);
  size_t live_peers() const;
  EagerChannel& channel(RankId peer);
  Peer& peer(RankId p);
  static Tensor tensor_of(const Message& m, const Buffer& buffer);
  static Message tensor_message(MessageType type, const Key& key, const Tensor& t);

  // rndv_send.cc: the sender's side of a rendezvous.
  void serve_rendezvous(RankId peer, const Key& key, PendingSend send);
  void on_cts(const Arrival& a);
  Status accept_cts(OutTransfer& t, const Message& m);
  void advance(uint32_t id);
  void advance_peer(RankId peer);
  bool stage_block(OutTransfer& t, uint32_t block);
  void block_ready(OutTransfer& t, uint32_t block);
  void pump_writes(RankId peer);
  void on_write_completion(const Completion& c, uint32_t serial);
  void send_fin(OutTransfer& t, uint32_t block);
  void free_source(OutTransfer& t, uint32_t block);
  void maybe_finish_out(uint32_t id);
  void fail_out(OutTransfer& t, const Status& why);

  // rndv_recv.cc: the receiver's side.
  void on_rts(const Arrival& a);
  Status prepare_in(InTransfer& t, const Message& m);
  void offer(InTransfer& t);
  void offer_peer(RankId src);
  void on_fin(const Arrival& a);
  Status accept_fin(InTransfer& t, uint32_t block);
  void copy_out(const InKey& key, uint32_t block);
  void block_done(InTransfer& t, uint32_t block);
  void maybe_finish_in(const InKey& key);
  void fail_in(InTransfer& t, const Status& why);

  RankEnv env_;
  Mv2Options options_;
  bool started_ = false;
  std::vector<std::unique_ptr<Peer>> peers_;  // by peer; null where no channel is open
  // The ranks with a channel, increasing: what the per-completion loops walk,
  // so their cost grows with the peers, not with the cluster.
  std::vector<RankId> open_peers_;
  std::vector<bool> peer_failed_;
  std::map<Key, PendingSend> sends_;       // sent, no REQUEST yet
  std::map<Key, RankId> requests_;         // REQUEST before the Send
  std::map<Key, Status> failed_sends_;     // fail_send before the REQUEST
  std::map<uint64_t, Status> aborted_steps_;
  std::map<RecvKey, PendingRecv> recvs_;   // REQUEST sent, no EAGER or RTS yet
  std::map<uint32_t, std::unique_ptr<OutTransfer>> out_;  // by transfer id
  std::map<InKey, std::unique_ptr<InTransfer>> in_;
  std::map<uint32_t, WriteRef> writes_;  // by write serial
  uint32_t next_transfer_ = 1;
  uint32_t next_write_ = 1;
  uint64_t copies_in_flight_ = 0;
  Mv2Stats stats_;
  mutable AuditSink* audit_sink_ = nullptr;
};

}  // namespace tensorwire::mvapich2
