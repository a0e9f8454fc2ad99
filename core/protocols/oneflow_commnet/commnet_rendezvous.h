// CommNetRendezvous: OneFlow's CommNet behind the Rendezvous seam, one per
// rank. A Recv sends a REQUEST (the seam's Send names no destination, so the
// receiver announces itself); the sender answers with the tensor inline
// (EAGER_TENSOR, up to eager_max_bytes) or a DESCRIPTOR of its registered
// tensor (address, length, rkey as the token, meta-data); the receiver
// allocates and registers the destination, reads it in chunks, runs the
// callback when the last chunk lands and sends READ_DONE, on which the sender
// deregisters the token and runs SendDone. README.md has the details.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/protocols/oneflow_commnet/commnet_audit.h"
#include "core/protocols/oneflow_commnet/commnet_options.h"
#include "core/protocols/oneflow_commnet/commnet_stats.h"
#include "core/protocols/oneflow_commnet/eager_channel.h"
#include "core/rank_env.h"
#include "core/rendezvous.h"

namespace tensorwire::oneflow {

class CommNetRendezvous final : public Rendezvous {
 public:
  CommNetRendezvous(RankEnv env, const CommNetOptions& options);
  ~CommNetRendezvous() override;

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
  // tokens, reads, callbacks and receives (nullptr: nowhere). Const: the
  // checker gets the ranks as const; reporting changes nothing they do.
  void set_audit_sink(AuditSink* sink) const { audit_sink_ = sink; }
  RankId rank() const { return env_.nic.rank(); }
  uint32_t receive_pool_size() const { return options_.receive_pool_size; }
  // Receives posted for `peer` now; nullopt when its channel failed.
  std::optional<uint32_t> receives_posted(RankId peer) const;
  const CommNetStats& stats() const { return stats_; }

 private:
  using Key = std::pair<std::string, uint64_t>;            // (name, step_id)
  using RecvKey = std::tuple<RankId, std::string, uint64_t>;  // (src, name, step_id)
  struct PendingSend {
    Tensor tensor;
    SendDone done;
  };
  struct PendingRecv {
    RecvArgs args;
    RecvDone done;
    uint32_t serial = 0;
  };
  struct Token {  // a registered source the peer reads
    RankId peer = 0;
    Key key;
    Buffer staging;  // a GPU source the NIC cannot reach, copied to host (length 0: none)
    MemoryRegion region;
    SendDone done;
  };
  struct ReadJob;  // rma_read.cc

  // commnet_rendezvous.cc: messages, matching, the eager path, failures.
  void on_completion(const Completion& c);
  void install_handlers(EagerChannel& ch);
  void on_request(const Arrival& a);
  void on_eager_tensor(const Arrival& a);
  void on_error(const Arrival& a);
  void serve(RankId peer, const Key& key, PendingSend send);
  void serve_eager(RankId peer, const Key& key, PendingSend send);
  void send_eager(RankId peer, const Key& key, const Tensor& t, Buffer content);
  void send_error(RankId peer, const Key& key, const Status& why);
  void deliver(RankId src, PendingRecv recv, Status status, Tensor tensor, RecvState from);
  void check_channel(RankId peer);
  void audit(AuditEvent e) const {
    if (audit_sink_ != nullptr) audit_sink_->on_audit(rank(), e);
  }
  void fail_peer(RankId peer, const Status& why);
  size_t live_peers() const;
  Result<Buffer> allocate(MemoryKind kind, uint32_t device, uint64_t bytes);
  void free_buffer(const Buffer& b);
  EagerChannel& channel(RankId peer);
  static Tensor tensor_of(const Message& m, const Buffer& buffer);
  static Message tensor_message(MessageType type, const Key& key, const Tensor& t);

  // rma_read.cc: tokens on the sender, chunked reads on the receiver.
  void serve_long(RankId peer, const Key& key, PendingSend send);
  void publish_token(RankId peer, const Key& key, PendingSend send, Buffer nic_source,
                     Buffer staging);
  void on_descriptor(const Arrival& a);
  void on_read_done(const Arrival& a);
  void post_reads(uint32_t job_id);
  void on_read_completion(const Completion& c, uint32_t job_id);
  void finish_read(uint32_t job_id);
  void end_job(uint32_t job_id, Status status);
  void send_read_done(RankId src, uint32_t token);
  void release_token(uint32_t token, Status status);
  void fail_reads_and_tokens(RankId peer, const Status& why);

  RankEnv env_;
  CommNetOptions options_;
  bool started_ = false;
  std::vector<std::unique_ptr<EagerChannel>> channels_;  // by peer; null where none is open
  // The ranks with a channel, increasing: what the per-completion loops walk,
  // so their cost grows with the peers, not with the cluster.
  std::vector<RankId> open_peers_;
  std::vector<bool> peer_failed_;
  std::map<Key, PendingSend> sends_;        // sent, no REQUEST yet
  std::map<Key, RankId> requests_;          // REQUEST before the Send
  std::map<Key, Status> failed_sends_;      // fail_send before the REQUEST
  std::map<uint64_t, Status> aborted_steps_;
  std::map<RecvKey, PendingRecv> recvs_;    // REQUEST sent, no answer yet
  std::map<uint32_t, Token> tokens_;
  std::map<uint32_t, std::unique_ptr<ReadJob>> reads_;
  uint32_t next_token_ = 1;
  uint32_t next_job_ = 1;
  uint32_t next_recv_serial_ = 1;
  uint64_t copies_in_flight_ = 0;
  CommNetStats stats_;
  mutable AuditSink* audit_sink_ = nullptr;
};

}  // namespace tensorwire::oneflow
