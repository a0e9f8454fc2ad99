// RdmaRendezvous: the glue. Owns the channels, the memory manager, the local
// tag-match table of sent tensors, the outstanding RdmaTensorRequests (by
// request_index) and RdmaTensorResponses (by response id), and the NIC
// completion handler that dispatches every completion by wr_id and opcode.
#include "core/protocols/tf_verbs_zero_copy/rdma_rendezvous.h"

#include <algorithm>
#include <array>
#include <deque>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "core/protocols/tf_verbs_zero_copy/hashed_tables.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_channel.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_imm_data.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_memory_mgr.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_protocol_env.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_tensor_request.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_tensor_response.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_write_id.h"
#include "core/assert.h"
#include "core/protocols/tf_verbs_zero_copy/request_index_allocator.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_message.h"

namespace tensorwire::tf_verbs {

namespace {

Status transport_error(const Completion& c) {
  StatusCode code = StatusCode::kQpError;
  if (c.status == CompletionStatus::kRetryExceeded ||
      c.status == CompletionStatus::kRnrRetryExceeded) {
    code = StatusCode::kPeerGone;
  } else if (c.status == CompletionStatus::kRemoteAccessError) {
    code = StatusCode::kRemoteAccess;
  }
  return Status(code, std::string(completion_opcode_name(c.opcode)) + " on the queue pair to rank " +
                          std::to_string(c.peer) + " completed with " +
                          completion_status_name(c.status));
}

using TensorKey = std::pair<std::string, uint64_t>;  // (name, step_id)
using TensorView = std::pair<std::string_view, uint64_t>;
// The local tag-match tables: hashed, looked up by a view of the name.
template <typename Value>
using TensorTable = std::unordered_map<TensorKey, Value, NamedKeyHash<TensorKey, TensorView>,
                                       NamedKeyEqual<TensorKey, TensorView>>;

// response_by_request_'s key: (peer, request_index) in one word, ordered as the pair.
uint64_t by_request_key(RankId peer, uint32_t request_index) {
  return (uint64_t{peer} << 32) | request_index;
}

// Where RendezvousStats counts a control message type (wire values 1..4).
size_t message_type_index(wire::RdmaMessageType type) {
  const auto raw = static_cast<size_t>(type);
  TW_ASSERT_MSG(raw >= 1 && raw <= kTfVerbsMessageTypes, "a control message of a known type");
  return raw - 1;
}

}  // namespace

class RdmaRendezvous::Impl final : public RdmaProtocolEnv {
 public:
  Impl(RankEnv env, TfVerbsOptions options)
      : env_(env),
        options_(options),
        mgr_(env.nic, env.memory),
        track_("rank " + std::to_string(env.nic.rank())) {
    mgr_.plant_overlapping_hand_out(options_.planted_bug == PlantedBug::kPoolOverlap);
  }

  ~Impl() override {
    *alive_ = false;
    if (started_) env_.nic.set_completion_handler([](const Completion&) {});
    // SendDone callbacks of tensors still held are dropped with the rendezvous
    // (alive_ is false now).
    // In the order the ordered maps these tables replaced did it: responses
    // fail by ascending id, and clear() destroyed entries by descending key.
    for (uint64_t id : sorted_keys(responses_)) {
      auto it = responses_.find(id);
      if (it != responses_.end()) it->second->Fail(Status(StatusCode::kAborted, "shutdown"));
    }
    destroy_descending(requests_);
    destroy_descending(responses_);
    destroy_descending(sent_);
    channels_.clear();
  }

  Status start() {
    if (start_attempted_) return {StatusCode::kInvalidArgument, "start() called twice"};
    start_attempted_ = true;  // a failed start is not retried over half-built channels
    auto zero = mgr_.allocate_registered(MemoryKind::kHostPinned, 0, 0, Access::kNone);
    if (!zero.is_ok()) return zero.status();
    zero_source_ = *zero;
    std::shared_ptr<bool> alive = alive_;
    env_.nic.set_completion_handler([this, alive](const Completion& c) {
      if (*alive) on_completion(c);
    });
    for (RankId peer : channel_peers(options_.channels, env_)) {
      auto channel = std::make_unique<RdmaChannel>(peer, env_.nic, env_.memory, mgr_,
                                                   options_.control_ring_size);
      Status st = channel->start();
      if (!st.is_ok()) {
        return Status(st.code(), "channel to rank " + std::to_string(peer) + ": " + st.message());
      }
      if (peer >= channels_.size()) channels_.resize(size_t{peer} + 1);
      TW_ASSERT_MSG(!channels_[peer], "one channel per peer");
      channels_[peer] = std::move(channel);
      ++channel_count_;
    }
    // Only now: a start() that failed half-way leaves send/recv refusing work
    // instead of finding some peers without a channel.
    TW_ASSERT_MSG(channel_count_ <= env_.nic.world_size() - 1, "at most a channel per other rank");
    started_ = true;
    return Status::ok();
  }

  Status send(std::string_view name, uint64_t step_id, Tensor tensor, SendDone done) {
    if (!started_) return {StatusCode::kInvalidArgument, "send before start()"};
    TensorKey key{std::string(name), step_id};
    if (aborted_steps_.count(step_id)) {
      return {StatusCode::kAborted, "send of '" + key.first + "': step " +
                                        std::to_string(step_id) + " was aborted"};
    }
    if (!tensor.is_dead && is_dma_able(tensor.dtype)) {
      if (!tensor.shape.num_elements()) {
        return {StatusCode::kInvalidArgument, "send of '" + key.first + "': invalid shape " +
                                                  tensor.shape.to_string()};
      }
      if (tensor.buffer.length < tensor.total_bytes()) {
        return {StatusCode::kInvalidArgument,
                "send of '" + key.first + "': buffer of " + std::to_string(tensor.buffer.length) +
                    " bytes holds less than the tensor's " +
                    std::to_string(tensor.total_bytes())};
      }
    }
    if (!tensor.is_dead && tensor.dtype == DataType::kString &&
        tensor.strings.size() != tensor.shape.num_elements().value_or(UINT64_MAX)) {
      return {StatusCode::kInvalidArgument,
              "send of '" + key.first + "': " + std::to_string(tensor.strings.size()) +
                  " strings for shape " + tensor.shape.to_string()};
    }
    if (sent_.count(key)) {
      return {StatusCode::kInvalidArgument, "duplicate send of '" + key.first + "' in step " +
                                                std::to_string(step_id)};
    }
    auto sent = std::make_shared<SentTensor>(env_.clock, alive_, std::move(tensor), std::move(done));
    if (std::optional<uint64_t> id = take_parked(key)) {
      responses_.at(*id)->Start(std::move(sent));
      after_response(*id);
      return Status::ok();
    }
    sent_.emplace(std::move(key), std::move(sent));
    return Status::ok();
  }

  void recv(RankId src, std::string_view name, uint64_t step_id, RecvArgs args, RecvDone done) {
    std::string n(name);
    if (!started_) {
      fail_later(std::move(done), Status(StatusCode::kInvalidArgument, "recv before start()"));
      return;
    }
    if (src == env_.nic.rank() || src >= env_.nic.world_size()) {
      fail_later(std::move(done),
                 Status(StatusCode::kInvalidArgument,
                        "recv of '" + n + "' from rank " + std::to_string(src) + " on rank " +
                            std::to_string(env_.nic.rank()) +
                            ": local transfers do not go through the NIC"));
      return;
    }
    if (aborted_steps_.count(step_id)) {
      fail_later(std::move(done), Status(StatusCode::kAborted, "recv of '" + n + "': step " +
                                                                   std::to_string(step_id) +
                                                                   " was aborted"));
      return;
    }
    RdmaChannel* ch = channel(src);
    if (ch == nullptr) {
      fail_later(std::move(done), Status(StatusCode::kInvalidArgument,
                                         "recv of '" + n + "': no channel to rank " +
                                             std::to_string(src)));
      return;
    }
    if (ch->broken()) {
      fail_later(std::move(done), ch->failure());
      return;
    }
    Result<uint32_t> index = indices_.allocate();
    if (!index.is_ok()) {
      fail_later(std::move(done), index.status());
      return;
    }
    if (options_.planted_bug == PlantedBug::kReuseRequestIndex && !requests_.empty()) {
      // An index still outstanding: the new request takes the old one's place.
      indices_.release(*index);
      index = std::min_element(requests_.begin(), requests_.end(), [](const auto& a, const auto& b) {
                return a.first < b.first;
              })->first;  // the smallest, as before
      requests_.erase(*index);
    }
    // The allocator never hands out an index still outstanding (the planted
    // bug took the old request's place above).
    TW_ASSERT_MSG(requests_.count(*index) == 0, "a request_index names one outstanding request");
    uint64_t serial = next_serial_++;
    auto request = std::make_unique<RdmaTensorRequest>(*this, *index, src, std::move(n), step_id,
                                                       args, std::move(done));
    RdmaTensorRequest& r = *request;
    requests_.emplace(*index, RequestEntry{std::move(request), serial});
    r.Start();
    after_request(*index);
  }

  Status fail_send(std::string_view name, uint64_t step_id, Status why) {
    // A precondition of the seam (core/rendezvous.h): the caller says why its
    // Send failed. An ok `why` would reach the peer as an ERROR_STATUS of OK.
    TW_ASSERT_MSG(!why.is_ok(), "fail_send reports why the Send failed");
    TensorKey key{std::string(name), step_id};
    if (sent_.count(key)) {
      return {StatusCode::kInvalidArgument,
              "fail_send of '" + key.first + "': it was already sent in step " +
                  std::to_string(step_id)};
    }
    stats_.count(TfVerbsPath::kSendFailed);
    Status reason(why.code(), "send of '" + key.first + "' on rank " +
                                  std::to_string(env_.nic.rank()) + " failed: " + why.message());
    if (std::optional<uint64_t> id = take_parked(key)) {
      responses_.at(*id)->Abort(reason);
      after_response(*id);
      return Status::ok();
    }
    failed_sends_.insert_or_assign(std::move(key), std::move(reason));
    return Status::ok();
  }

  // Removes the oldest request parked for `key` (Recv before Send) and returns
  // its response id; nullopt when none is parked or its response is gone.
  std::optional<uint64_t> take_parked(const TensorKey& key) {
    if (parked_.empty()) return std::nullopt;  // the usual case: no hashing of the name
    auto parked = parked_.find(TensorView{key.first, key.second});
    if (parked == parked_.end() || parked->second.empty()) return std::nullopt;
    uint64_t id = parked->second.front();
    parked->second.pop_front();
    if (parked->second.empty()) parked_.erase(parked);
    if (!responses_.count(id)) return std::nullopt;
    return id;
  }

  void abort_step(uint64_t step_id, Status why) {
    if (why.is_ok()) why = Status(StatusCode::kAborted, "step aborted");
    aborted_steps_.insert(step_id);
    stats_.count(TfVerbsPath::kStepAborted);
    std::vector<uint32_t> requests;
    for (auto& [index, entry] : requests_) {
      if (entry.request->step_id() == step_id) requests.push_back(index);
    }
    std::sort(requests.begin(), requests.end());
    for (uint32_t index : requests) {
      auto it = requests_.find(index);
      if (it == requests_.end()) continue;
      it->second.request->Abort(why);
      after_request(index);
    }
    std::vector<uint64_t> responses;
    for (auto& [id, response] : responses_) {
      if (response->step_id() == step_id) responses.push_back(id);
    }
    std::sort(responses.begin(), responses.end());
    for (uint64_t id : responses) {
      auto it = responses_.find(id);
      if (it == responses_.end()) continue;
      it->second->Abort(why);
      after_response(id);
    }
    std::erase_if(failed_sends_, [step_id](const auto& kv) { return kv.first.second == step_id; });
    // Only the aborted step's keys are copied and sorted, not every sent tensor's.
    std::vector<TensorKey> aborted;
    for (const auto& [key, sent] : sent_) {
      if (key.second == step_id) aborted.push_back(key);
    }
    std::sort(aborted.begin(), aborted.end());
    for (const TensorKey& key : aborted) {
      auto it = sent_.find(key);
      it->second->status = why;
      sent_.erase(it);  // SendDone runs as the last holder lets go: in key order
    }
  }

  void release(const Tensor& tensor) { mgr_.release_registered(tensor.buffer); }

  std::optional<Buffer> destination_of(uint32_t request_index) const {
    auto it = requests_.find(request_index);
    if (it == requests_.end()) return std::nullopt;
    return it->second.request->destination();
  }

  size_t outstanding_requests() const { return requests_.size(); }
  size_t pending_responses() const { return responses_.size(); }

  // Everything the protocol keeps, in a fixed order (maps in key order):
  // equal for equal states, however they were reached.
  uint64_t state_digest() const {
    StateDigest d;
    d.add(started_ ? 1 : 0).add(start_attempted_ ? 1 : 0);
    d.add(next_serial_).add(next_response_id_);
    mgr_.digest(d);
    indices_.digest(d);
    digest_buffer(d, zero_source_.buffer);
    d.add(channel_count_);
    for (const auto& ch : channels_) {
      if (ch) ch->digest(d);
    }
    d.add(sent_.size());
    for (const auto* entry : sorted_entries(sent_)) {
      const auto& [key, sent] = *entry;
      d.add(key.first).add(key.second).add(sent.use_count());
      digest_buffer(d, sent->tensor.buffer);
      d.add(static_cast<uint64_t>(sent->status.code()));
    }
    d.add(parked_.size());
    for (const auto* entry : sorted_entries(parked_)) {
      const auto& [key, ids] = *entry;
      d.add(key.first).add(key.second).add(ids.size());
      for (uint64_t id : ids) d.add(id);
    }
    d.add(failed_sends_.size());
    for (const auto* entry : sorted_entries(failed_sends_)) {
      d.add(entry->first.first).add(entry->first.second);
      d.add(static_cast<uint64_t>(entry->second.code()));
    }
    d.add(aborted_steps_.size());
    for (uint64_t step : aborted_steps_) d.add(step);
    d.add(requests_.size());
    for (const auto* entry : sorted_entries(requests_)) {
      d.add(entry->first).add(entry->second.serial);
      entry->second.request->digest(d);
    }
    d.add(responses_.size());
    for (const auto* entry : sorted_entries(responses_)) entry->second->digest(d);
    d.add(response_by_request_.size());
    for (const auto* entry : sorted_entries(response_by_request_)) {
      d.add(entry->first >> 32).add(entry->first & 0xFFFFFFFFu).add(entry->second);
    }
    return d.value();
  }

  const RendezvousStats& stats_view() const {
    stats_.registrations = mgr_.registrations();
    stats_.paths[static_cast<size_t>(TfVerbsPath::kPoolReuse)] = mgr_.pool_reuses();
    stats_.paths[static_cast<size_t>(TfVerbsPath::kPoolSizeOffClass)] = mgr_.sizes_off_class();
    return stats_;
  }

  // --- RdmaProtocolEnv ---
  RankEnv& env() override { return env_; }
  const TfVerbsOptions& options() const override { return options_; }
  RdmaMemoryMgr& memory_mgr() override { return mgr_; }
  RendezvousStats& stats() override { return stats_; }
  const RegisteredBuffer& zero_source() const override { return zero_source_; }
  const std::string& trace_track() const override { return track_; }

  Status send_control(RankId peer, const wire::RdmaMessage& message) override {
    RdmaChannel* ch = channel(peer);
    if (!ch) return {StatusCode::kInvalidArgument, "no channel to rank " + std::to_string(peer)};
    Status st = ch->send_message(message);
    if (st.is_ok()) ++stats_.messages_sent[message_type_index(message.type)];
    return st;
  }

  Status post_write(RankId peer, const SendWorkRequest& wr) override {
    RdmaChannel* ch = channel(peer);
    if (!ch) return {StatusCode::kInvalidArgument, "no channel to rank " + std::to_string(peer)};
    return ch->post(wr);
  }

  std::function<void(Status)> request_callback(
      uint32_t request_index, std::function<void(RdmaTensorRequest&, Status)> event) override {
    auto it = requests_.find(request_index);
    uint64_t serial = it == requests_.end() ? 0 : it->second.serial;
    std::shared_ptr<bool> alive = alive_;
    return [this, alive, request_index, serial, event = std::move(event)](Status st) {
      if (!*alive) return;
      auto found = requests_.find(request_index);
      if (found == requests_.end() || found->second.serial != serial) return;
      event(*found->second.request, std::move(st));
      after_request(request_index);
    };
  }

  std::function<void(Status)> response_callback(
      uint64_t response_id, std::function<void(RdmaTensorResponse&, Status)> event) override {
    std::shared_ptr<bool> alive = alive_;
    return [this, alive, response_id, event = std::move(event)](Status st) {
      if (!*alive) return;
      auto found = responses_.find(response_id);
      if (found == responses_.end()) return;
      event(*found->second, std::move(st));
      after_response(response_id);
    };
  }

 private:
  struct RequestEntry {
    std::unique_ptr<RdmaTensorRequest> request;
    uint64_t serial = 0;  // tells a reused request_index from the old request
  };

  RdmaChannel* channel(RankId peer) {
    return peer < channels_.size() ? channels_[peer].get() : nullptr;
  }

  // Destroys every entry of `table`, the largest key first (as std::map's
  // clear() did: destructors release buffers and cancel timers).
  template <typename Table>
  static void destroy_descending(Table& table) {
    // Reverse iterators, not std::views::reverse: clang 14 (the fuzz build,
    // clang-tidy) cannot compile libstdc++ 12's ranges.
    const auto keys = sorted_keys(table);
    for (auto it = keys.rbegin(); it != keys.rend(); ++it) table.erase(*it);
  }

  void fail_later(RecvDone done, Status why) {
    ++stats_.recvs_failed;
    std::shared_ptr<bool> alive = alive_;
    env_.clock.schedule_after(0, [alive, done = std::move(done), why = std::move(why)] {
      if (*alive && done) done(why, Tensor{});
    });
  }

  // After any event on a request: deliver its outcome, erase it when done.
  void after_request(uint32_t index) {
    auto it = requests_.find(index);
    if (it == requests_.end()) return;
    std::optional<RdmaTensorRequest::Completion> completion = it->second.request->take_completion();
    if (it->second.request->finished()) {
      requests_.erase(it);
      TW_ASSERT_MSG(indices_.is_outstanding(index), "a live request holds its request_index");
      indices_.release(index);
    }
    // Last: the callback may call back into the rendezvous.
    if (completion && completion->done) {
      completion->done(std::move(completion->status), std::move(completion->tensor));
    }
  }

  void after_response(uint64_t id) {
    auto it = responses_.find(id);
    if (it == responses_.end() || !it->second->finished()) return;
    RdmaTensorResponse& r = *it->second;
    const size_t indexed = response_by_request_.erase(by_request_key(r.peer(), r.request_index()));
    TW_ASSERT_MSG(indexed == 1, "every live response is found by (peer, request_index)");
    // Most responses were never parked: no hashing of the name for them.
    auto parked = parked_.empty() ? parked_.end() : parked_.find(TensorView{r.name(), r.step_id()});
    if (parked != parked_.end()) {
      std::erase(parked->second, id);
      if (parked->second.empty()) parked_.erase(parked);
    }
    responses_.erase(it);
  }

  // --- completions ---
  void on_completion(const Completion& c) {
    std::optional<RdmaWriteID> id = RdmaWriteID::decode(c.wr_id);
    RdmaChannel* ch = channel(c.peer);
    if (!id || !ch) {
      ++stats_.unknown_completions;
      return;
    }
    switch (id->type) {
      case RdmaWriteIDType::kRingReceive:
        on_ring_completion(*ch, id->context, c);
        return;
      case RdmaWriteIDType::kControlMessage:
        if (c.status != CompletionStatus::kSuccess) {
          fail_channel_on(*ch, c);
          (void)ch->message_sent(id->context);  // broken: just frees the slot
        } else if (Status st = ch->message_sent(id->context); !st.is_ok()) {
          fail_channel(*ch, st);
        }
        break;
      case RdmaWriteIDType::kTensorWrite:
      case RdmaWriteIDType::kTensorProtoWrite: {
        if (c.status != CompletionStatus::kSuccess) fail_channel_on(*ch, c);
        auto it = responses_.find(id->context);
        if (it == responses_.end()) {
          ++stats_.unknown_completions;
        } else if (c.status == CompletionStatus::kSuccess) {
          it->second->WriteCompleted();
          after_response(id->context);
        } else {
          it->second->Destroy();
          after_response(id->context);
        }
        break;
      }
    }
    if (!ch->broken() || ch->draining()) {
      Status st = ch->drain_pending();
      if (!st.is_ok()) fail_channel(*ch, st);
    }
  }

  void repost(RdmaChannel& ch, uint64_t slot) {
    // Reposted even on a channel we closed ourselves: a peer that keeps
    // sending must not be left retrying receiver-not-ready forever.
    Status st = ch.repost(slot);
    if (!st.is_ok() && !ch.broken()) fail_channel(ch, st);
  }

  void on_ring_completion(RdmaChannel& ch, uint64_t slot, const Completion& c) {
    if (c.status != CompletionStatus::kSuccess) {
      fail_channel_on(ch, c);  // flushed: the QP is in error, nothing to repost
      return;
    }
    if (c.opcode == CompletionOpcode::kRecv) {
      on_ring_message(ch, slot, c);
      return;
    }
    repost(ch, slot);
    if (ch.broken()) return;
    if (c.opcode != CompletionOpcode::kRecvRdmaWithImm || !c.has_imm) {
      ++stats_.protocol_errors;
      return;
    }
    on_write_with_imm(ch, c.imm_data, c.byte_len);
  }

  // A control message in ring slot `slot`, decoded into decoded_ (its memory
  // reused: no allocation per message), or into a message of its own when
  // this runs inside another message's handler.
  void on_ring_message(RdmaChannel& ch, uint64_t slot, const Completion& c) {
    std::span<const std::byte> bytes = ch.ring_bytes(slot, c.byte_len);
    std::optional<wire::RdmaMessage> nested;
    wire::RdmaMessage& message = decoding_ ? nested.emplace() : decoded_;
    const bool outer = !decoding_;
    decoding_ = true;
    struct Done {
      bool& decoding;
      bool outer;
      ~Done() {
        if (outer) decoding = false;
      }
    } done{decoding_, outer};
    Status decoded = bytes.empty() ? Status(StatusCode::kMalformedMessage,
                                            "empty or oversized control message (" +
                                                std::to_string(c.byte_len) + " bytes)")
                                   : wire::decode_into(bytes, message);
    repost(ch, slot);
    if (ch.broken()) return;
    if (!decoded.is_ok()) {
      ++stats_.malformed_messages;
      fail_channel(ch, Status(StatusCode::kMalformedMessage, "control message from rank " +
                                                                 std::to_string(ch.peer()) + ": " +
                                                                 decoded.message()));
      return;
    }
    on_control_message(ch, message);
  }

  void on_write_with_imm(RdmaChannel& ch, uint32_t imm, uint32_t byte_len) {
    if (is_reserved_imm(imm)) {
      ++stats_.protocol_errors;
      return;
    }
    auto it = requests_.find(imm);
    if (it == requests_.end() || it->second.request->src() != ch.peer()) {
      ++stats_.protocol_errors;
      return;
    }
    it->second.request->RecvTensorContent(byte_len);
    after_request(imm);
  }

  // The request a META_DATA_UPDATE / ERROR_STATUS from `peer` is about.
  RdmaTensorRequest* request_for(RankId peer, const wire::RdmaMessage& m) {
    auto it = requests_.find(m.request_index);
    if (it == requests_.end()) return nullptr;
    RdmaTensorRequest& r = *it->second.request;
    if (r.src() != peer || r.name() != m.name || r.step_id() != m.step_id) return nullptr;
    return &r;
  }

  void on_control_message(RdmaChannel& ch, const wire::RdmaMessage& m) {
    // decode() accepts only the four types.
    ++stats_.messages_received[message_type_index(m.type)];
    switch (m.type) {
      case wire::RdmaMessageType::kTensorRequest:
        on_tensor_request(ch, m);
        return;
      case wire::RdmaMessageType::kMetaDataUpdate: {
        RdmaTensorRequest* r = request_for(ch.peer(), m);
        if (!r) {
          ++stats_.stale_messages;
          return;
        }
        r->RecvTensorMetaData(m);
        after_request(m.request_index);
        return;
      }
      case wire::RdmaMessageType::kTensorReRequest: {
        auto found = response_by_request_.find(by_request_key(ch.peer(), m.request_index));
        if (found == response_by_request_.end()) {
          // A withdrawal racing with the write that completed the request is expected.
          ++stats_.stale_messages;
          return;
        }
        uint64_t id = found->second;
        auto response = responses_.find(id);
        TW_ASSERT_MSG(response != responses_.end(), "response_by_request_ names live responses");
        RdmaTensorResponse& r = *response->second;
        if (r.name() != m.name || r.step_id() != m.step_id) {
          ++stats_.protocol_errors;
          return;
        }
        r.Resume(m);
        after_response(id);
        return;
      }
      case wire::RdmaMessageType::kErrorStatus: {
        RdmaTensorRequest* r = request_for(ch.peer(), m);
        if (!r) {
          ++stats_.stale_messages;
          return;
        }
        // The peer's bytes: decode() accepts an ERROR_STATUS with code OK, so
        // this stays an error value (kInternal) rather than an assertion.
        StatusCode code = m.error_code == StatusCode::kOk ? StatusCode::kInternal : m.error_code;
        r->RecvErrorStatus(Status(code, "rank " + std::to_string(ch.peer()) + ": " +
                                            m.error_message));
        after_request(m.request_index);
        return;
      }
    }
    ++stats_.protocol_errors;
  }

  void on_tensor_request(RdmaChannel& ch, const wire::RdmaMessage& m) {
    const uint64_t by_request = by_request_key(ch.peer(), m.request_index);
    if (response_by_request_.count(by_request) || is_reserved_imm(m.request_index)) {
      ++stats_.protocol_errors;  // a request_index reused while outstanding
      return;
    }
    uint64_t id = next_response_id_++;
    const bool fresh =
        responses_.emplace(id, std::make_unique<RdmaTensorResponse>(*this, id, ch.peer(), m)).second;
    TW_ASSERT_MSG(fresh, "response ids are never reused");
    response_by_request_.emplace(by_request, id);
    RdmaTensorResponse& r = *responses_.at(id);
    const TensorView key{m.name, m.step_id};
    if (aborted_steps_.count(m.step_id)) {
      stats_.count(TfVerbsPath::kRequestForAbortedStep);
      r.Abort(Status(StatusCode::kAborted, "step " + std::to_string(m.step_id) +
                                               " was aborted on rank " +
                                               std::to_string(env_.nic.rank()) + "; '" +
                                               m.name + "' will not be sent"));
      after_response(id);
      return;
    }
    // failed_sends_ is almost always empty: no hashing of the name then.
    if (auto failed = failed_sends_.empty() ? failed_sends_.end() : failed_sends_.find(key);
        failed != failed_sends_.end()) {
      r.Abort(failed->second);  // the Send failed here before the request came
      failed_sends_.erase(failed);
      after_response(id);
      return;
    }
    auto sent = sent_.find(key);
    if (sent == sent_.end()) {
      // Recv before Send: wait for the tensor.
      parked_.try_emplace(TensorKey{m.name, m.step_id}).first->second.push_back(id);
      stats_.count(TfVerbsPath::kRecvBeforeSend);
      return;
    }
    std::shared_ptr<SentTensor> tensor = std::move(sent->second);
    sent_.erase(sent);
    stats_.count(TfVerbsPath::kSendBeforeRecv);
    r.Start(std::move(tensor));
    after_response(id);
  }

  // A failed completion breaks its channel. A QP's error flushes every
  // posted receive, and only the first completion finds the channel whole:
  // the rest would build a message fail_channel never reads (a twentieth of
  // a model checker's search with QP errors went to those strings).
  void fail_channel_on(RdmaChannel& ch, const Completion& c) {
    fail_channel(ch, ch.broken() ? Status(StatusCode::kQpError, "flushed") : transport_error(c));
  }

  void fail_channel(RdmaChannel& ch, Status why) {
    // Callers pass a failed completion's or a failed post's error, or the
    // malformed message: requests and responses fail with it.
    TW_ASSERT(!why.is_ok());
    if (ch.broken()) {
      // Closed by us and still sending its last answers, the queue pair now
      // failed as well: what it had not sent never will be.
      if (ch.draining()) settle_unposted(ch, ch.stop_draining());
      return;
    }
    const bool queue_pair_works = why.code() == StatusCode::kMalformedMessage;
    if (queue_pair_works) {
      // Closed by us, the queue pair still works: tell the peer about the
      // requests of its we know of, so they fail now rather than hang.
      std::vector<uint64_t> answerable;
      for (auto& [id, response] : responses_) {
        if (response->peer() == ch.peer() && !response->writing()) answerable.push_back(id);
      }
      std::sort(answerable.begin(), answerable.end());
      for (uint64_t id : answerable) {
        auto it = responses_.find(id);
        if (it == responses_.end()) continue;
        it->second->Abort(why);
        after_response(id);
      }
    }
    const std::vector<SendWorkRequest> unposted = ch.mark_broken(why, queue_pair_works);
    TW_ASSERT(ch.broken() && ch.draining() == queue_pair_works);
    ++stats_.channel_failures;
    stats_.count(TfVerbsPath::kChannelFailed);
    env_.trace.instant(track_, "channel failed", env_.clock.now_ns(),
                       "rank " + std::to_string(ch.peer()) + ": " + why.to_string());
    std::vector<uint32_t> requests;
    for (auto& [index, entry] : requests_) {
      if (entry.request->src() == ch.peer()) requests.push_back(index);
    }
    std::sort(requests.begin(), requests.end());
    for (uint32_t index : requests) {
      auto it = requests_.find(index);
      if (it == requests_.end()) continue;
      it->second.request->Fail(why);
      after_request(index);
    }
    std::vector<uint64_t> responses;
    for (auto& [id, response] : responses_) {
      if (response->peer() == ch.peer()) responses.push_back(id);
    }
    std::sort(responses.begin(), responses.end());
    for (uint64_t id : responses) {
      auto it = responses_.find(id);
      if (it == responses_.end()) continue;
      it->second->Fail(why);
      after_response(id);
    }
    settle_unposted(ch, unposted);
  }

  // Work the NIC never saw gets no flush completion from it: settle it as
  // flushed here, so a response waiting on its write is destroyed.
  void settle_unposted(RdmaChannel& ch, const std::vector<SendWorkRequest>& unposted) {
    for (const SendWorkRequest& wr : unposted) {
      Completion flushed;
      flushed.wr_id = wr.wr_id;
      flushed.qp = ch.qp();
      flushed.peer = ch.peer();
      flushed.status = CompletionStatus::kWorkRequestFlushed;
      on_completion(flushed);
    }
  }

  RankEnv env_;
  TfVerbsOptions options_;
  RdmaMemoryMgr mgr_;  // first in, last out: everything below returns buffers to it
  std::string track_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool started_ = false;          // start() succeeded: send and recv may work
  bool start_attempted_ = false;
  mutable RendezvousStats stats_;
  RegisteredBuffer zero_source_;
  wire::RdmaMessage decoded_;  // the control message being handled (on_ring_message)
  bool decoding_ = false;      // decoded_ is in use
  RequestIndexAllocator indices_;
  uint64_t next_serial_ = 1;
  uint64_t next_response_id_ = 1;
  // By peer rank up to the highest peer (null: no channel), so a completion
  // finds its channel at once; a pointer per rank below the highest peer is
  // little beside a channel's ring.
  std::vector<std::unique_ptr<RdmaChannel>> channels_;
  size_t channel_count_ = 0;
  // Hashed tables (hashed_tables.h): looked up at every message, walked in
  // key order wherever the order shows.
  TensorTable<std::shared_ptr<SentTensor>> sent_;  // local tag-match table
  TensorTable<std::deque<uint64_t>> parked_;       // requests before Send
  TensorTable<Status> failed_sends_;               // Sends that failed locally
  std::set<uint64_t> aborted_steps_;
  // Flat tables: an entry moves as the table grows, so what outlives a
  // lookup is the request or response itself (held by unique_ptr), never
  // the entry.
  absl::flat_hash_map<uint32_t, RequestEntry> requests_;
  absl::flat_hash_map<uint64_t, std::unique_ptr<RdmaTensorResponse>> responses_;
  absl::flat_hash_map<uint64_t, uint64_t> response_by_request_;  // by_request_key -> id
};

RdmaRendezvous::RdmaRendezvous(RankEnv env, TfVerbsOptions options)
    : impl_(std::make_unique<Impl>(env, options)) {}
RdmaRendezvous::~RdmaRendezvous() = default;

Status RdmaRendezvous::start() { return impl_->start(); }
Status RdmaRendezvous::send(std::string_view name, uint64_t step_id, Tensor tensor,
                            SendDone done) {
  return impl_->send(name, step_id, std::move(tensor), std::move(done));
}
void RdmaRendezvous::recv(RankId src, std::string_view name, uint64_t step_id, RecvArgs args,
                          RecvDone done) {
  impl_->recv(src, name, step_id, args, std::move(done));
}
void RdmaRendezvous::abort_step(uint64_t step_id, Status why) {
  impl_->abort_step(step_id, std::move(why));
}
Status RdmaRendezvous::fail_send(std::string_view name, uint64_t step_id, Status why) {
  return impl_->fail_send(name, step_id, std::move(why));
}
void RdmaRendezvous::release(const Tensor& tensor) { impl_->release(tensor); }
std::optional<Buffer> RdmaRendezvous::destination_of(uint32_t request_index) const {
  return impl_->destination_of(request_index);
}
namespace {

constexpr const char* kRequestStateNames[] = {"Idle",     "Requested", "ReRequested",
                                              "Copying",  "Withdrawn", "Finished"};
constexpr const char* kResponseStateNames[] = {"WaitingForSend", "Preparing", "WaitingReRequest",
                                               "Writing", "Finished"};
static_assert(std::size(kRequestStateNames) == RendezvousStats::kRequestStates);
static_assert(std::size(kResponseStateNames) == RendezvousStats::kResponseStates);

using RequestTable = std::array<std::array<bool, RendezvousStats::kRequestStates>,
                                RendezvousStats::kRequestStates>;
using ResponseTable = std::array<std::array<bool, RendezvousStats::kResponseStates>,
                                 RendezvousStats::kResponseStates>;

// RdmaTensorRequest: Idle -> Requested (TENSOR_REQUEST sent) -> ReRequested
// (META_DATA_UPDATE answered) -> Copying (content in the host proxy) ->
// Finished; a Recv that fails while waiting withdraws its request and waits
// for the peer's confirmation. Any live state may finish at once on an error.
constexpr RequestTable kRequestTransitions = {{
    //  Idle   Req    ReReq  Copy   Withdr Fin
    {{false, true, false, false, false, true}},   // Idle
    {{false, false, true, true, true, true}},     // Requested
    {{false, false, false, true, true, true}},    // ReRequested
    {{false, false, false, false, false, true}},  // Copying
    {{false, false, false, false, false, true}},  // Withdrawn
    {{false, false, false, false, false, false}}, // Finished
}};

// RdmaTensorResponse: parked until Send, then a clone or staging copy
// (Preparing), then either the write (direct) or META_DATA_UPDATE and a wait
// for the re-request; Finished when the write completes or it is destroyed.
constexpr ResponseTable kResponseTransitions = {{
    //  WaitSend Prep   WaitRe Writing Fin
    {{false, true, true, true, true}},     // WaitingForSend
    {{false, false, true, true, true}},    // Preparing
    {{false, false, false, true, true}},   // WaitingReRequest
    {{false, false, false, false, true}},  // Writing
    {{false, false, false, false, false}}, // Finished
}};

// The machine's table with nothing counted: built once, copied per run (a
// copy shares its names and rules, see TransitionTable).
template <size_t N>
TransitionTable empty_table(std::string machine, const char* const (&names)[N],
                            const std::array<std::array<bool, N>, N>& allowed) {
  TransitionTable t(std::move(machine), std::vector<std::string>(std::begin(names), std::end(names)));
  for (size_t from = 0; from < N; ++from) {
    for (size_t to = 0; to < N; ++to) {
      if (allowed[from][to]) t.allow(from, to);
    }
  }
  return t;
}

template <size_t N>
TransitionTable table_of(const TransitionTable& empty,
                         const std::array<std::array<uint64_t, N>, N>& taken) {
  TW_ASSERT(empty.state_count() == N);
  TransitionTable t = empty;
  for (size_t from = 0; from < N; ++from) {
    for (size_t to = 0; to < N; ++to) {
      if (taken[from][to] != 0) t.count(from, to, taken[from][to]);
    }
  }
  return t;
}

}  // namespace

const char* request_state_name(size_t state) {
  return state < std::size(kRequestStateNames) ? kRequestStateNames[state] : "?";
}

const char* response_state_name(size_t state) {
  return state < std::size(kResponseStateNames) ? kResponseStateNames[state] : "?";
}

bool request_transition_allowed(size_t from, size_t to) {
  return from < RendezvousStats::kRequestStates && to < RendezvousStats::kRequestStates &&
         kRequestTransitions[from][to];
}

bool response_transition_allowed(size_t from, size_t to) {
  return from < RendezvousStats::kResponseStates && to < RendezvousStats::kResponseStates &&
         kResponseTransitions[from][to];
}

size_t RdmaRendezvous::outstanding_work() const {
  return impl_->outstanding_requests() + impl_->pending_responses();
}

ProtocolCounters RdmaRendezvous::counters() const {
  const RendezvousStats& s = impl_->stats_view();
  using R = CounterRole;
  // The names are the results JSON's keys since the first release.
  return {
      {"tensor_requests", R::kControlMessage, s.tensor_requests_sent},
      {"meta_data_updates", R::kControlMessage, s.meta_data_updates_sent},
      {"re_requests", R::kControlMessage, s.re_requests_sent},
      {"error_statuses", R::kControlMessage, s.error_statuses_sent},
      {"content_writes", R::kContentTransfer, s.content_writes},
      {"recvs_completed", R::kOther, s.recvs_completed},
      {"recvs_failed", R::kOther, s.recvs_failed},
      {"cpu_copies", R::kCopy, s.cpu_copies},
      {"device_copies", R::kCopy, s.device_copies},
      {"registrations", R::kRegistration, s.registrations},
      {"malformed_messages", R::kProblem, s.malformed_messages},
      {"protocol_errors", R::kProblem, s.protocol_errors},
      {"stale_messages", R::kProblem, s.stale_messages},
      {"unknown_completions", R::kProblem, s.unknown_completions},
      {"channel_failures", R::kProblem, s.channel_failures},
  };
}

std::vector<TransitionTable> RdmaRendezvous::transition_tables() const {
  return transition_tables_of(impl_->stats_view());
}

void RdmaRendezvous::add_coverage(Coverage& into) const {
  add_tf_verbs_coverage(into, impl_->stats_view());
}

std::vector<TransitionTable> transition_tables_of(const RendezvousStats& s) {
  static const TransitionTable kRequests =
      empty_table("RdmaTensorRequest", kRequestStateNames, kRequestTransitions);
  static const TransitionTable kResponses =
      empty_table("RdmaTensorResponse", kResponseStateNames, kResponseTransitions);
  return {table_of(kRequests, s.request_transitions), table_of(kResponses, s.response_transitions)};
}

size_t RdmaRendezvous::outstanding_requests() const { return impl_->outstanding_requests(); }
uint64_t RdmaRendezvous::state_digest() const { return impl_->state_digest(); }
size_t RdmaRendezvous::pending_responses() const { return impl_->pending_responses(); }
const RendezvousStats& RdmaRendezvous::stats() const { return impl_->stats_view(); }

}  // namespace tensorwire::tf_verbs
