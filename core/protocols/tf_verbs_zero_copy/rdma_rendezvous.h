// TensorFlow-style rendezvous over the zero-copy verbs protocol, one per rank.
//
// Send(name, step_id, tensor) puts a tensor in the local tag-match table;
// Recv(src, name, step_id, ...) asks rank `src` for it with a TENSOR_REQUEST
// and completes when the content has landed (RdmaTensorRequest), or fails with
// the error the sender reported (ERROR_STATUS) or the transport raised.
// Send-before-Recv and Recv-before-Send both work. Everything runs on the
// rank's progress loop; no call blocks.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "core/coverage.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_coverage.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_options.h"
#include "core/rank_env.h"
#include "core/rendezvous.h"
#include "core/status.h"
#include "core/tensor.h"

namespace tensorwire::tf_verbs {

// The seam's types, by the names this protocol's code has always used.
using ::tensorwire::RecvArgs;
using ::tensorwire::RecvDone;
using ::tensorwire::SendDone;

struct RendezvousStats {
  uint64_t tensor_requests_sent = 0;      // TENSOR_REQUEST
  uint64_t meta_data_updates_sent = 0;    // META_DATA_UPDATE
  uint64_t re_requests_sent = 0;          // TENSOR_RE_REQUEST
  uint64_t error_statuses_sent = 0;       // ERROR_STATUS
  uint64_t content_writes = 0;            // RDMA writes of tensor content (incl. proto)
  uint64_t recvs_completed = 0;
  uint64_t recvs_failed = 0;
  uint64_t cpu_copies = 0;                // clones and serializations done by the CPU
  uint64_t device_copies = 0;             // proxy -> GPU and GPU clones
  uint64_t registrations = 0;             // memory registrations this rank made
  // Problems seen and survived (never a crash):
  uint64_t malformed_messages = 0;   // control messages that failed wire::decode
  uint64_t protocol_errors = 0;      // well-formed but impossible: reserved or unknown
                                     // immediates, duplicate request indices, ...
  uint64_t stale_messages = 0;       // answers for requests already gone
  uint64_t unknown_completions = 0;  // completions whose wr_id names nothing of ours
  uint64_t channel_failures = 0;     // channels closed (QP error or malformed input)
  // State machine coverage: transitions taken, [from][to], by the requests
  // (RdmaTensorRequest's states) and the responses (RdmaTensorResponse's).
  static constexpr size_t kRequestStates = 6;
  static constexpr size_t kResponseStates = 5;
  std::array<std::array<uint64_t, kRequestStates>, kRequestStates> request_transitions{};
  std::array<std::array<uint64_t, kResponseStates>, kResponseStates> response_transitions{};
  // Feature coverage (tf_verbs_coverage.h): control messages by type (wire
  // value - 1), and the paths taken.
  std::array<uint64_t, kTfVerbsMessageTypes> messages_sent{};
  std::array<uint64_t, kTfVerbsMessageTypes> messages_received{};
  std::array<uint64_t, kTfVerbsPaths> paths{};

  void count(TfVerbsPath path) { ++paths[static_cast<size_t>(path)]; }
};

// RdmaTensorRequest's and RdmaTensorResponse's tables with `stats`' counts
// (zero counts: the declaration alone).
std::vector<TransitionTable> transition_tables_of(const RendezvousStats& stats);

// Names of the states counted in RendezvousStats' transition tables.
const char* request_state_name(size_t state);
const char* response_state_name(size_t state);
// The transitions RdmaTensorRequest and RdmaTensorResponse may take
// ([from][to]); set_state asserts every transition against them.
bool request_transition_allowed(size_t from, size_t to);
bool response_transition_allowed(size_t from, size_t to);

class RdmaRendezvous final : public Rendezvous {
 public:
  RdmaRendezvous(RankEnv env, TfVerbsOptions options);
  ~RdmaRendezvous();
  RdmaRendezvous(const RdmaRendezvous&) = delete;
  RdmaRendezvous& operator=(const RdmaRendezvous&) = delete;

  // Registers the control-message rings and posts their receives for every
  // peer, and takes over the NIC's completion handler. Call once, first.
  Status start() override;

  Status send(std::string_view name, uint64_t step_id, Tensor tensor,
              SendDone done = {}) override;
  void recv(RankId src, std::string_view name, uint64_t step_id, RecvArgs args,
            RecvDone done) override;

  // Fails every pending Recv and Send of the step with `why`; later requests
  // from peers for the step are answered with ERROR_STATUS.
  void abort_step(uint64_t step_id, Status why) override;

  // The application could not produce (name, step_id) (its Send failed
  // locally): the peer's Recv for it, parked here now or arriving later, is
  // answered with ERROR_STATUS carrying `why`, instead of waiting forever.
  // An error when the tensor was already sent.
  Status fail_send(std::string_view name, uint64_t step_id, Status why) override;

  // Give a received tensor's memory back (it may be reused for later Recvs).
  void release(const Tensor& tensor) override;

  // The buffer an outstanding request currently asks its peer to write into
  // (result tensor, host proxy or proto buffer); nullopt when request_index
  // names no outstanding request. For invariant checks.
  std::optional<Buffer> destination_of(uint32_t request_index) const;

  // Number of requests and responses still alive (0 when quiescent).
  size_t outstanding_requests() const;
  size_t pending_responses() const;

  // A hash of everything the protocol keeps (tables, cache, pool, channels),
  // equal for equal states whatever order of events led to them: for model
  // checkers' state caches.
  uint64_t state_digest() const override;
  // outstanding_requests() + pending_responses().
  size_t outstanding_work() const override;
  ProtocolCounters counters() const override;
  std::vector<TransitionTable> transition_tables() const override;
  void add_coverage(Coverage& into) const override;

  const RendezvousStats& stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorwire::tf_verbs
