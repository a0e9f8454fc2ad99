#include "core/workload/workload_driver.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/assert.h"
#include "core/state_digest.h"
#include "core/workload/tensor_content.h"

namespace tensorwire {

// Source tensors are persistent, like TensorFlow variables and the allocator
// arena behind gradients: one buffer per (rank, name, memory, size), refilled
// every step, so steady-state steps make no new registrations.
struct WorkloadDriver::SourceKey {
  RankId rank;
  std::string name;
  MemoryKind kind;
  uint32_t device;
  uint64_t bytes;
  auto tie() const { return std::tie(rank, name, kind, device, bytes); }
  bool operator<(const SourceKey& o) const { return tie() < o.tie(); }
  bool operator==(const SourceKey& o) const { return tie() == o.tie(); }
  // Every Send looks its source up (and its generation, and again at
  // SendDone): a hash, not a tree of string compares, which at a parameter
  // server of 1024 nodes was 16 levels deep.
  struct Hash {
    size_t operator()(const SourceKey& k) const {
      StateDigest d;
      d.add(k.rank).add(std::hash<std::string>{}(k.name)).add(static_cast<uint64_t>(k.kind));
      d.add(k.device).add(k.bytes);
      return static_cast<size_t>(d.value());
    }
  };
};

namespace {

// The harness fills, checks and scribbles over tensors a piece at a time: it
// holds one piece beside the tensor, never a second copy of it (a 2 GiB
// tensor would otherwise cost 2 GiB more per buffer the harness touches).
constexpr uint64_t kContentPieceBytes = 16ull << 20;

// Writes tensor content `key` over `buffer`; the first failure stops it.
Status fill_in_pieces(MemorySpace& memory, const Buffer& buffer, uint64_t key,
                      std::vector<std::byte>& piece) {
  for (uint64_t at = 0; at < buffer.length; at += kContentPieceBytes) {
    piece.resize(std::min(kContentPieceBytes, buffer.length - at));
    fill_content_at(key, at, piece);
    if (Status st = memory.write_bytes(buffer, at, piece); !st.is_ok()) return st;
  }
  return Status::ok();
}

// Writes `value` over every byte of `buffer`.
void scribble_in_pieces(MemorySpace& memory, const Buffer& buffer, std::byte value,
                        std::vector<std::byte>& piece) {
  piece.assign(std::min(kContentPieceBytes, buffer.length), value);
  for (uint64_t at = 0; at < buffer.length; at += piece.size()) {
    const uint64_t n = std::min<uint64_t>(piece.size(), buffer.length - at);
    if (!memory.write_bytes(buffer, at, std::span<const std::byte>(piece).first(n)).is_ok()) return;
  }
}

// Why the first `bytes` of `buffer` are not content `key` (empty when they are).
std::string content_problem(MemorySpace& memory, const Buffer& buffer, uint64_t bytes,
                            uint64_t key, std::vector<std::byte>& piece) {
  TW_ASSERT_MSG(buffer.length >= bytes, "the caller checked the buffer holds the tensor");
  for (uint64_t at = 0; at < bytes; at += kContentPieceBytes) {
    piece.resize(std::min(kContentPieceBytes, bytes - at));
    if (Status st = memory.read_bytes(buffer, at, piece); !st.is_ok()) {
      return "cannot read result: " + st.to_string();
    }
    const size_t bad = first_content_mismatch_at(key, at, piece);
    if (bad != piece.size()) return "content differs at byte " + std::to_string(at + bad);
  }
  return "";
}

}  // namespace

class WorkloadDriver::Impl {
 public:
  // A source tensor's buffer and what is pending on it, kept per SourceKey.
  struct Source {
    Buffer buffer;
    uint32_t pending = 0;  // its Sends whose SendDone has not come
  };
  struct SourceState {
    bool live = false;  // `source` holds this tensor's buffer now
    Source source;
    uint64_t generation = 0;  // Sends of this source so far
  };

  Impl(const Workload& workload, uint64_t seed, std::vector<RankEnv> envs,
       std::vector<Rendezvous*> rendezvous)
      : workload_(workload), seed_(seed), envs_(std::move(envs)), rdv_(std::move(rendezvous)) {
    TW_ASSERT_MSG(envs_.size() == rdv_.size(), "one environment and one rendezvous per rank");
  }
  // One rank's part: every rank index maps to the local env (so the rank
  // checks below stay as they are), and only the local rendezvous exists.
  Impl(const Workload& workload, uint64_t seed, RankId local, uint32_t world, RankEnv env,
       Rendezvous* rendezvous, PhaseGate& gate)
      : workload_(workload),
        seed_(seed),
        envs_(world, env),
        rdv_(world, nullptr),
        local_(local),
        gate_(&gate) {
    if (local < world) rdv_[local] = rendezvous;
  }

  void stop(Status why) {
    if (stopped_) return;
    stopped_ = true;
    stop_reason_ = why.is_ok() ? Status(StatusCode::kAborted, "stopped") : why;
    if (phase_open_) {
      for (size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].done) continue;
        slots_[i].done = true;
        TransferResult& tr = record(i);
        tr.status = stop_reason_;
        tr.done = true;
        tr.done_ns = clock0().now_ns();
        ++result_.recvs_failed;
      }
    }
    phase_open_ = false;
  }
  bool stopped_ = false;
  Status stop_reason_;

  // The application gives up on the step it is in, on one rank (TensorFlow's
  // StepAbort): the rank's protocol fails what it holds of the step and
  // answers peers' requests for it with an error; later calls of the step go
  // on as written and fail there. Once per rank and step.
  std::optional<uint64_t> abort_step(RankId rank, Status why) {
    if (!can_abort_step(rank)) return std::nullopt;
    const uint64_t step_id = step().step_id;
    aborted_.emplace_back(rank, step_id);
    rdv_[rank]->abort_step(step_id, std::move(why));
    return step_id;
  }
  bool can_abort_step(RankId rank) const {
    if (stopped_ || result_.finished || step_index_ >= workload_.steps.size()) return false;
    if (rank >= rdv_.size() || rdv_[rank] == nullptr) return false;
    const std::pair<RankId, uint64_t> key(rank, step().step_id);
    return std::find(aborted_.begin(), aborted_.end(), key) == aborted_.end();
  }
  std::vector<std::pair<RankId, uint64_t>> aborted_;  // (rank, step_id), in order

  void start() {
    if (workload_.steps.empty()) {
      result_.finished = true;
      return;
    }
    schedule_phase(0, 0);
  }

  // The sources in key order: what is freed and digested does not depend on
  // the hash table's layout.
  using SourceEntry = std::pair<const SourceKey, SourceState>;
  static std::vector<const SourceEntry*> in_key_order(
      const std::unordered_map<SourceKey, SourceState, SourceKey::Hash>& map) {
    std::vector<const SourceEntry*> entries;
    entries.reserve(map.size());
    for (const SourceEntry& entry : map) entries.push_back(&entry);
    std::sort(entries.begin(), entries.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
    return entries;
  }

  // Entries stay (a SendDone still to come finds its source's state); their
  // buffers go.
  void release_memory() {
    for (const auto* entry : in_key_order(sources_)) {
      if (entry->second.live) envs_[entry->first.rank].memory.free(entry->second.source.buffer);
    }
    for (auto& [key, state] : sources_) state.live = false;
    for (auto& [rank, buffer] : retired_) envs_[rank].memory.free(buffer);
    retired_.clear();
    released_ = true;
  }

  WorkloadResult result_;
  std::function<void(size_t, size_t)> on_progress_;

  // Where the workload stands, for model checkers' state caches.
  uint64_t state_digest() const {
    const Impl& i = *this;
    StateDigest d;
    d.add(i.step_index_).add(i.phase_index_).add(i.phase_open_ ? 1 : 0).add(i.released_ ? 1 : 0);
    d.add(i.first_result_).add(i.recvs_left_).add(i.stopped_ ? 1 : 0).add(i.waiting_for_gate_ ? 1 : 0);
    d.add(i.slots_.size());
    for (const auto& slot : i.slots_) d.add(slot.transfer).add(slot.done ? 1 : 0);
    const auto sources = in_key_order(i.sources_);
    d.add(static_cast<uint64_t>(std::count_if(sources.begin(), sources.end(),
                                              [](const auto* entry) { return entry->second.live; })));
    for (const auto* entry : sources) {
      const auto& [key, state] = *entry;
      if (!state.live) continue;
      d.add(key.rank).add(key.name).add(state.source.buffer.addr).add(state.source.buffer.length);
      d.add(state.source.pending);
    }
    for (const auto* entry : sources) {
      if (entry->second.generation == 0) continue;
      d.add(entry->first.rank).add(entry->first.name).add(entry->second.generation);
    }
    d.add(i.aborted_.size());
    for (const auto& [rank, step_id] : i.aborted_) d.add(rank).add(step_id);
    d.add(i.retired_.size());
    for (const auto& [rank, buffer] : i.retired_) d.add(rank).add(buffer.addr);
    d.add(i.result_.steps.size());
    for (const StepResult& step : i.result_.steps) {
      d.add(step.step_id).add(step.transfers.size());
      for (const TransferResult& t : step.transfers) {
        d.add(t.done ? 1 : 0).add(static_cast<uint64_t>(t.status.code())).add(t.verified ? 1 : 0).add(t.mismatch);
      }
    }
    return d.value();
  }

 private:
  struct RecvSlot {
    size_t transfer = 0;
    bool done = false;
  };

  const WorkloadStep& step() const { return workload_.steps[step_index_]; }
  const WorkloadPhase& phase() const { return step().phases[phase_index_]; }
  Clock& clock0() { return envs_[local_.value_or(0)].clock; }
  // Whether this process plays rank r's calls (all ranks unless driving one).
  bool is_local(RankId r) const { return !local_ || *local_ == r; }

  void schedule_phase(size_t step_index, size_t phase_index) {
    TW_ASSERT(step_index < workload_.steps.size());
    const WorkloadStep& s = workload_.steps[step_index];
    TimeNs compute = phase_index < s.phases.size() ? s.phases[phase_index].compute_before_ns : 0;
    clock0().schedule_after(compute, [this, step_index, phase_index] {
      if (!stopped_) start_phase(step_index, phase_index);
    });
  }

  void start_phase(size_t step_index, size_t phase_index) {
    step_index_ = step_index;
    phase_index_ = phase_index;
    if (phase_index == 0) {
      StepResult sr;
      sr.step_id = step().step_id;
      sr.start_ns = clock0().now_ns();
      result_.steps.push_back(std::move(sr));
    }
    if (phase_index_ >= step().phases.size() || phase().transfers.empty()) {
      finish_phase();
      return;
    }
    phase_start_ns_ = clock0().now_ns();
    phase_open_ = true;
    ++phase_serial_;
    const auto& transfers = phase().transfers;
    TW_ASSERT_MSG(transfers.size() <= UINT32_MAX, "a phase's transfers are numbered in 32 bits");
    first_result_ = result_.steps.back().transfers.size();
    recvs_left_ = 0;
    slots_.assign(transfers.size(), RecvSlot{});
    for (size_t i = 0; i < transfers.size(); ++i) {
      slots_[i].transfer = i;
      // Another process waits for a Recv of another rank.
      slots_[i].done = !is_local(transfers[i].dst);
      if (!slots_[i].done) ++recvs_left_;
    }
    const bool nothing_to_wait_for = recvs_left_ == 0;
    for (size_t i = 0; i < transfers.size(); ++i) {
      const TensorTransfer& t = transfers[i];
      TransferResult tr;
      tr.step_id = step().step_id;
      tr.phase = phase().label;
      tr.name = t.name;
      tr.src = t.src;
      tr.dst = t.dst;
      result_.steps.back().transfers.push_back(std::move(tr));
    }
    for (size_t i = 0; i < transfers.size() && is_current(step_index, phase_index); ++i) {
      const TensorTransfer& t = transfers[i];
      if (t.src >= envs_.size() || t.dst >= envs_.size() || t.src == t.dst) {
        fail_transfer(i, Status(StatusCode::kInvalidArgument,
                                "transfer '" + t.name + "' names ranks " +
                                    std::to_string(t.src) + " -> " + std::to_string(t.dst)));
        continue;
      }
      // A phase can end before its timers fire (every transfer failed early);
      // a timer from an ended phase must not act on the next phase's transfer i.
      // The phase by its serial and i as 32 bits: a capture of 16 bytes,
      // which std::function keeps without allocating (two timers per
      // transfer; with 64-bit step and phase indices each allocated).
      const auto index = static_cast<uint32_t>(i);
      const uint32_t serial = phase_serial_;
      if (is_local(t.src)) {
        envs_[t.src].clock.schedule_after(t.send_offset_ns, [this, index, serial] {
          if (is_open_phase(serial)) do_send(index);
        });
      }
      if (is_local(t.dst)) {
        envs_[t.dst].clock.schedule_after(t.recv_offset_ns, [this, index, serial] {
          if (is_open_phase(serial) && !slots_[index].done) do_recv(index);
        });
      }
    }
    // A rank with no Recv in the phase is done with it at once (its Sends
    // still run while the gate waits for the others).
    if (nothing_to_wait_for && is_current(step_index, phase_index)) finish_phase();
  }

  bool is_current(size_t step_index, size_t phase_index) const {
    return phase_open_ && step_index == step_index_ && phase_index == phase_index_;
  }
  // Each phase is started once, so its serial names it as (step, phase) does.
  bool is_open_phase(uint32_t serial) const { return phase_open_ && serial == phase_serial_; }

  Tensor make_source(const TensorTransfer& t, uint64_t key, SourceState& state) {
    Tensor tensor;
    tensor.dtype = t.dtype;
    tensor.shape = t.shape;
    tensor.is_dead = t.is_dead;
    if (t.is_dead) return tensor;
    MemorySpace& memory = envs_[t.src].memory;
    if (t.dtype == DataType::kString) {
      tensor.strings = string_content(key, t.shape.num_elements().value_or(0), t.string_bytes);
      return tensor;
    }
    uint64_t bytes = tensor.total_bytes();
    if (state.live && state.source.pending != 0) {
      // The last Send of this source has not called SendDone: the NIC may
      // still read the buffer (its receiver can be done before the sender's
      // completion comes), so filling it now would race with that read. It
      // retires, and this Send gets a buffer of its own.
      retired_.emplace_back(t.src, state.source.buffer);
      state.live = false;
    }
    if (!state.live) {
      Result<Buffer> buffer = memory.allocate(t.src_kind, t.src_device, bytes);
      if (!buffer.is_ok()) return tensor;  // send() reports the empty buffer
      state.source = Source{*buffer, 0};
      state.live = true;
    }
    tensor.buffer = state.source.buffer;
    if (bytes > 0) ++state.source.pending;  // until its SendDone (do_send)
    if (memory.holds_payload() && bytes > 0) {
      Status st = fill_in_pieces(memory, tensor.buffer, key, piece_);
      (void)st;  // a failed fill shows up as a content mismatch at the receiver
    }
    return tensor;
  }

  void do_send(size_t i) {
    TW_ASSERT_MSG(phase_open_ && i < slots_.size(), "a Send of the open phase");
    const TensorTransfer& t = phase().transfers[i];
    // start_phase failed the transfers with a bad rank; this process plays t.src.
    TW_ASSERT(t.src < rdv_.size() && rdv_[t.src] != nullptr);
    uint64_t key = content_key(seed_, step().step_id, t.name);
    // One lookup per Send: the SendDone below holds on to the entry (an
    // unordered_map's elements stay where they are as it grows).
    SourceState& state = sources_[SourceKey{t.src, t.name, t.src_kind, t.src_device, bytes_of(t)}];
    Tensor tensor = make_source(t, key, state);
    Status st;
    if (!t.is_dead && is_dma_able(t.dtype) && tensor.buffer.length != tensor.total_bytes()) {
      // The harness's own allocation: the scenario is too big, not the protocol wrong.
      st = Status(StatusCode::kResourceLimit, "cannot allocate source tensor '" + t.name +
                                                "' on rank " + std::to_string(t.src));
    } else {
      // Once Send is done the application may reuse its buffer, and does: in
      // payload mode the source is scribbled over, unless a later Send of the
      // same tensor has taken the buffer again. A protocol that still reads
      // the caller's buffer after SendDone then delivers the scribble.
      const uint64_t generation = ++state.generation;
      const Buffer buffer = tensor.buffer;
      MemorySpace& memory = envs_[t.src].memory;
      const CurrentTransfer current(envs_[t.src].attribution, tag_of(i));
      st = rdv_[t.src]->send(t.name, step().step_id, std::move(tensor),
                             [this, source = &state, generation, buffer, &memory](Status) {
                               settle_send(*source, buffer);
                               if (source->generation != generation) return;
                               if (!memory.holds_payload() || buffer.length == 0) return;
                               if (!released_ && source->live) {
                                 scribble_in_pieces(memory, buffer, std::byte{0xa5}, piece_);
                               }
                             });
    }
    if (st.is_ok()) return;
    // The Recv (posted already or still to come) learns of the failure
    // through ERROR_STATUS and completes the transfer with it.
    Status told = rdv_[t.src]->fail_send(t.name, step().step_id, st);
    if (!told.is_ok()) fail_transfer(i, st);
  }

  // A Send's SendDone came: its source is the application's again.
  // (A retired buffer's Sends settle against nothing: it is no source any more.)
  void settle_send(SourceState& state, const Buffer& buffer) {
    if (buffer.length == 0 || !state.live || state.source.buffer.addr != buffer.addr) return;
    TW_ASSERT_MSG(state.source.pending > 0, "SendDone ends a pending Send");
    --state.source.pending;
  }

  // What a Send of `t` puts in its source buffer.
  static uint64_t bytes_of(const TensorTransfer& t) { return total_bytes_of(t.dtype, t.shape); }

  void do_recv(size_t i) {
    TW_ASSERT_MSG(phase_open_ && i < slots_.size() && !slots_[i].done, "a Recv still to do");
    const TensorTransfer& t = phase().transfers[i];
    TW_ASSERT(t.dst < rdv_.size() && rdv_[t.dst] != nullptr);
    size_t step_index = step_index_;
    size_t phase_index = phase_index_;
    record(i).recv_called_ns = envs_[t.dst].clock.now_ns();
    const CurrentTransfer current(envs_[t.dst].attribution, tag_of(i));
    rdv_[t.dst]->recv(t.src, t.name, step().step_id, {t.dst_kind, t.dst_device},
                      [this, i, step_index, phase_index](Status status, Tensor tensor) {
                        on_recv_done(step_index, phase_index, i, std::move(status),
                                     std::move(tensor));
                      });
  }

  // Names transfer i of the open phase to the backend (core/transfer_attribution.h).
  uint64_t tag_of(size_t i) const {
    return transfer_tag(result_.steps.size() - 1, first_result_ + i);
  }

  TransferResult& record(size_t i) {
    TW_ASSERT(!result_.steps.empty() && first_result_ + i < result_.steps.back().transfers.size());
    return result_.steps.back().transfers[first_result_ + i];
  }

  void on_recv_done(size_t step_index, size_t phase_index, size_t i, Status status,
                    Tensor tensor) {
    if (stopped_) return;  // the run ended; what arrives late is not judged
    if (step_index != step_index_ || phase_index != phase_index_ || slots_[i].done) {
      ++result_.recvs_completed_twice;
      return;
    }
    const TensorTransfer& t = phase().transfers[i];
    TransferResult& tr = record(i);
    tr.done = true;
    tr.done_ns = envs_[t.dst].clock.now_ns();
    if (envs_[t.dst].attribution != nullptr) envs_[t.dst].attribution->transfer_done(tag_of(i));
    tr.status = status;
    if (status.is_ok()) {
      verify(t, tensor, tr);
      rdv_[t.dst]->release(tensor);
    } else {
      ++result_.recvs_failed;
    }
    complete_slot(i);
  }

  void verify(const TensorTransfer& t, const Tensor& got, TransferResult& tr) {
    MemorySpace& memory = envs_[t.dst].memory;
    uint64_t key = content_key(seed_, step().step_id, t.name);
    std::string why;
    if (got.is_dead != t.is_dead) {
      why = t.is_dead ? "expected a dead tensor" : "got a dead tensor";
    } else if (!t.is_dead && (got.dtype != t.dtype || !(got.shape == t.shape))) {
      why = "meta-data " + std::string(data_type_name(got.dtype)) + got.shape.to_string() +
            ", sent " + data_type_name(t.dtype) + t.shape.to_string();
    } else if (!t.is_dead && t.dtype == DataType::kString) {
      auto expected = string_content(key, t.shape.num_elements().value_or(0), t.string_bytes);
      tr.bytes = 0;
      for (const auto& s : got.strings) tr.bytes += s.size();
      if (memory.holds_payload() && got.strings != expected) why = "string content differs";
    } else if (!t.is_dead) {
      tr.bytes = got.total_bytes();
      if (got.buffer.length < tr.bytes) {
        why = "result buffer shorter than the tensor";
      } else if (got.buffer.kind != t.dst_kind) {
        why = std::string("result in ") + memory_kind_name(got.buffer.kind) + ", wanted " +
              memory_kind_name(t.dst_kind);
      } else if (memory.holds_payload() && tr.bytes > 0) {
        why = content_problem(memory, got.buffer, tr.bytes, key, piece_);
      }
    }
    if (why.empty()) {
      tr.verified = memory.holds_payload();
    } else {
      tr.mismatch = why;
      ++result_.content_mismatches;
    }
  }

  void fail_transfer(size_t i, Status status) {
    if (slots_[i].done || !is_local(phase().transfers[i].dst)) return;
    record(i).status = std::move(status);
    record(i).done = true;
    record(i).done_ns = clock0().now_ns();
    ++result_.recvs_failed;
    complete_slot(i);
  }

  void complete_slot(size_t i) {
    // Each of the phase's local Recvs completes once: recvs_left_ counts them down.
    TW_ASSERT(i < slots_.size() && !slots_[i].done);
    TW_ASSERT(recvs_left_ > 0);
    slots_[i].done = true;
    if (--recvs_left_ == 0) finish_phase();
  }

  void finish_phase() {
    if (gate_ == nullptr) {
      end_phase();
      return;
    }
    // The phase stays open (its Sends may still run) until every rank agrees.
    if (waiting_for_gate_) return;
    waiting_for_gate_ = true;
    const size_t step_index = step_index_;
    const size_t phase_index = phase_index_;
    gate_->phase_done(step().step_id, phase_index_, [this, step_index, phase_index](Status st) {
      waiting_for_gate_ = false;
      if (stopped_ || !is_current(step_index, phase_index)) return;
      if (!st.is_ok()) {
        stop(std::move(st));
        return;
      }
      end_phase();
    });
  }

  void end_phase() {
    TW_ASSERT(step_index_ < workload_.steps.size() && !result_.steps.empty());
    phase_open_ = false;
    size_t next_phase = phase_index_ + 1;
    if (next_phase < step().phases.size()) {
      schedule_phase(step_index_, next_phase);
      return;
    }
    result_.steps.back().end_ns = clock0().now_ns();
    if (on_progress_) on_progress_(step_index_ + 1, workload_.steps.size());
    if (step_index_ + 1 < workload_.steps.size()) {
      schedule_phase(step_index_ + 1, 0);
    } else {
      result_.finished = true;
    }
  }

  const Workload& workload_;  // the caller's, outliving the driver
  uint64_t seed_;
  std::vector<RankEnv> envs_;
  std::vector<Rendezvous*> rdv_;
  // Entries are never erased (release_memory only marks them not live): a
  // pending SendDone holds a pointer to its source's entry, and an
  // unordered_map's elements stay put as it grows.
  std::unordered_map<SourceKey, SourceState, SourceKey::Hash> sources_;
  std::vector<std::byte> piece_;  // one piece of a tensor being filled, checked or scribbled over
  // Sources still busy with a Send when the same tensor was sent again (freed at the end).
  std::vector<std::pair<RankId, Buffer>> retired_;
  bool released_ = false;
  bool phase_open_ = false;  // between start_phase and finish_phase
  std::vector<RecvSlot> slots_;
  size_t step_index_ = 0;
  size_t phase_index_ = 0;
  uint32_t phase_serial_ = 0;  // phases started so far
  size_t first_result_ = 0;
  size_t recvs_left_ = 0;
  TimeNs phase_start_ns_ = 0;
  std::optional<RankId> local_;  // set when driving one rank's part
  PhaseGate* gate_ = nullptr;
  bool waiting_for_gate_ = false;
};

WorkloadDriver::WorkloadDriver(const Workload& workload, uint64_t seed, std::vector<RankEnv> envs,
                               std::vector<Rendezvous*> rendezvous)
    : impl_(std::make_unique<Impl>(workload, seed, std::move(envs), std::move(rendezvous))) {}
WorkloadDriver::WorkloadDriver(const Workload& workload, uint64_t seed, RankId local,
                               uint32_t world, RankEnv env, Rendezvous* rendezvous,
                               PhaseGate& gate)
    : impl_(std::make_unique<Impl>(workload, seed, local, world, env, rendezvous, gate)) {}
WorkloadDriver::~WorkloadDriver() = default;

void WorkloadDriver::start() { impl_->start(); }
void WorkloadDriver::set_progress_callback(std::function<void(size_t, size_t)> on_progress) {
  impl_->on_progress_ = std::move(on_progress);
}
bool WorkloadDriver::finished() const { return impl_->result_.finished; }
void WorkloadDriver::stop(Status why) { impl_->stop(std::move(why)); }
std::optional<uint64_t> WorkloadDriver::abort_step(RankId rank, Status why) { return impl_->abort_step(rank, std::move(why)); }
bool WorkloadDriver::can_abort_step(RankId rank) const { return impl_->can_abort_step(rank); }
bool WorkloadDriver::stopped() const { return impl_->stopped_; }
const Status& WorkloadDriver::stop_reason() const { return impl_->stop_reason_; }
void WorkloadDriver::release_memory() { impl_->release_memory(); }
const WorkloadResult& WorkloadDriver::result() const { return impl_->result_; }
WorkloadResult WorkloadDriver::take_result() { return std::exchange(impl_->result_, WorkloadResult{}); }

uint64_t WorkloadDriver::state_digest() const { return impl_->state_digest(); }

}  // namespace tensorwire
