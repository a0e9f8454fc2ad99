// LegacyRendezvous: TensorFlow's verbs transport before zero-copy (seed
// 004), behind the Rendezvous seam, one per rank. It plays the seed's
// RdmaRemoteRendezvous (Send puts the tensor in a local table, Recv inserts
// a callback in the channel's callback table and sends TENSOR_REQUEST) and
// RdmaAdapter (the actions upon completing each message, rdma_adapter.cc);
// the tensor buffers' transmission is tensor_buffer_transfer.cc.
// README.md has the message flow.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/protocols/tf_verbs_legacy/legacy_audit.h"
#include "core/protocols/tf_verbs_legacy/legacy_options.h"
#include "core/protocols/tf_verbs_legacy/legacy_stats.h"
#include "core/protocols/tf_verbs_legacy/rdma_channel.h"
#include "core/rank_env.h"
#include "core/rendezvous.h"

namespace tensorwire::tf_legacy {

class LegacyRendezvous final : public Rendezvous {
 public:
  LegacyRendezvous(RankEnv env, const LegacyOptions& options);
  ~LegacyRendezvous() override;

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

  // For the invariants and tests (nullptr: nowhere). Const: the checker gets
  // the ranks as const; reporting changes nothing they do.
  // A sink is told of every buffer peers may already write.
  void set_audit_sink(AuditSink* sink) const;
  RankId rank() const { return env_.nic.rank(); }
  const LegacyStats& stats() const { return stats_; }

 private:
  using Key = std::pair<std::string, uint64_t>;               // (name, step_id)
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

  // rdma_adapter.cc: completions and the actions upon each message.
  void on_completion(const Completion& c);
  void on_send_completion(const Completion& c);
  void on_write_with_imm(const Completion& c);
  Status on_message(RdmaChannel& ch, uint32_t byte_len);
  Status on_ack(RdmaChannel& ch, uint32_t byte_len);
  Status on_buffer_request(RdmaChannel& ch, const RdmaMessage& m);
  Status on_buffer_response(RdmaChannel& ch, const RdmaMessage& m);
  Status on_buffer_idle(RdmaChannel& ch, const RdmaMessage& m);
  void on_tensor_request(RdmaChannel& ch, const RdmaMessage& m);
  void on_error(RdmaChannel& ch, const RdmaMessage& m);
  void refuse_buffer(RdmaChannel& ch, const RdmaMessage& m, const Status& why);
  void fail_channel(RankId peer, const Status& why);
  // A channel fails itself when the NIC refuses a post; this fails what
  // waits on it. Called as each entry point (send, recv, a completion, a
  // copy's end) returns.
  void settle(RankId peer);
  void settle_all();
  // ERROR (the harness's extension): the peer's end of (name, step_id) fails too.
  void send_error(RdmaChannel& ch, const std::string& name, uint64_t step_id, const Status& why);

  // tensor_buffer_transfer.cc: the sender's tensor buffers, the receiver's copy out.
  void send_next_item(RdmaChannel& ch, RdmaTensorBuffer& tb);
  void post_copy(RdmaChannel& ch, RdmaTensorBuffer& tb);
  void request_buffer(RdmaChannel& ch, RdmaTensorBuffer& tb, uint64_t bytes);
  void transmit(RdmaChannel& ch, RdmaTensorBuffer& tb);
  void copy_in(RdmaChannel& ch, RdmaTensorBuffer& tb, const Buffer& host_source);
  void give_up_copy(RdmaChannel& ch, RdmaTensorBuffer& tb, const Status& why);
  void write_out(RdmaChannel& ch, RdmaTensorBuffer& tb);
  void tensor_written(RdmaChannel& ch, uint32_t index, const Completion& c);
  Status on_tensor_write(RdmaChannel& ch, uint32_t index, uint32_t byte_len);
  void copy_out(RdmaChannel& ch, RxTensorBuffer& rx, const RdmaMessage& header, PendingRecv recv);
  void fail_item(TensorItem& item, const Status& why);
  // The buffer's current item fails and its receiver is told.
  void abandon_current(RdmaChannel& ch, RdmaTensorBuffer& tb, const Status& why);
  static RdmaMessage header_of(const TensorItem& item, RdmaMessageType type);

  void deliver(RankId src, PendingRecv recv, Status status, Tensor tensor, RecvState from);
  void audit(AuditEvent e) const {
    if (audit_sink_ != nullptr) audit_sink_->on_audit(rank(), e);
  }
  RdmaChannel& channel(RankId peer);

  RankEnv env_;
  LegacyOptions options_;
  bool started_ = false;
  std::vector<std::unique_ptr<RdmaChannel>> channels_;  // by peer; null where none is open
  // The ranks with a channel, increasing: what the per-completion loops walk,
  // so their cost grows with the peers, not with the cluster.
  std::vector<RankId> open_peers_;
  std::vector<bool> peer_failed_;  // by peer: fail_channel ran
  std::map<Key, PendingSend> sends_;             // the local table: sent, not yet asked for
  std::map<Key, RankId> waiting_;                // tensor ids popped before their Send
  std::map<Key, Status> failed_sends_;
  std::map<uint64_t, Status> aborted_steps_;
  std::map<RecvKey, PendingRecv> callbacks_;     // the channels' callback tables
  uint32_t next_recv_serial_ = 1;
  uint64_t copies_in_flight_ = 0;
  LegacyStats stats_;
  mutable AuditSink* audit_sink_ = nullptr;
};

}  // namespace tensorwire::tf_legacy
