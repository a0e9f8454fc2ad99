#include "model/dpor_search.h"

#include <algorithm>
#include <bit>

#include "core/assert.h"
#include "core/splitmix64.h"

namespace tensorwire::model {
namespace {

constexpr uint32_t kFaultRank = UINT32_MAX;  // how RecordingScheduler offers a fault
constexpr uint64_t kEveryRank = ~uint64_t{0};

}  // namespace

DporSearch::DporSearch(uint32_t ranks) : ranks_(ranks) {
  const uint64_t r = ranks;
  send_queues_apart_ = r + r * r <= 64;
  queue_pairs_apart_ = r + 2 * r * r <= 64;
  const uint64_t pairs = queue_pairs_apart_ ? r * r : 0;
  if (send_queues_apart_ && r > 0) {
    // What is left after the ranks, send queues, queue pairs and CPUs, shared out.
    const uint64_t left = 64 - r - r * r - pairs;
    const uint64_t bins = left >= r ? (left - r) / r : 0;
    memory_bins_ = static_cast<uint32_t>(std::min<uint64_t>(bins, kMemoryBins));
  }
  objects_ = send_queues_apart_
                 ? static_cast<uint32_t>(r + r * r + pairs + (memory_bins_ > 0 ? r + r * memory_bins_ : 0))
                 : std::min<uint32_t>(ranks, 63) + 1;
  if (objects_ == 0) objects_ = 1;
}

uint64_t DporSearch::rank_bit(uint32_t rank) const { return uint64_t{1} << std::min<uint32_t>(rank, 63); }

uint64_t DporSearch::object_bit(uint32_t object) { return uint64_t{1} << object; }

uint64_t DporSearch::bits_of(const sim::SharedObject& o) const {
  using Kind = sim::SharedObject::Kind;
  const bool paired = o.kind == Kind::kSendQueue || o.kind == Kind::kQueuePair;
  const bool known = o.rank < ranks_ && (!paired || o.peer < ranks_);
  if (o.kind == Kind::kRank || !send_queues_apart_ || !known) return rank_bit(o.rank);
  const uint32_t queues = ranks_;  // first send-queue bit
  if (o.kind == Kind::kSendQueue) return object_bit(queues + o.rank * ranks_ + o.peer);
  const uint32_t pairs = queues + ranks_ * ranks_;  // first queue-pair bit, when apart
  if (o.kind == Kind::kQueuePair) {
    return queue_pairs_apart_ ? object_bit(pairs + o.rank * ranks_ + o.peer) : rank_bit(o.rank);
  }
  if (memory_bins_ == 0) return rank_bit(o.rank);
  const uint32_t cpus = pairs + (queue_pairs_apart_ ? ranks_ * ranks_ : 0);
  if (o.kind == Kind::kCpu) return object_bit(cpus + o.rank);
  const uint32_t first_bin = cpus + ranks_ + o.rank * memory_bins_;
  return memory_bin_bits(o.addr, o.length, memory_bins_) << first_bin;
}

uint64_t DporSearch::memory_bin_bits(uint64_t addr, uint64_t length, uint32_t bins) {
  TW_ASSERT_HOT(bins > 0 && bins <= kMemoryBins);
  constexpr uint64_t kUnit = 256;
  const uint64_t first = addr / kUnit;
  const uint64_t last = (addr + (length > 0 ? length - 1 : 0)) / kUnit;
  const uint64_t field = (uint64_t{1} << bins) - 1;
  if (last < first || last - first + 1 >= bins) return field;  // every bin of the rank
  // Units first..last fall in the bins from first's on, wrapping round: a
  // run of that many bits, rotated within the field.
  const uint32_t count = static_cast<uint32_t>(last - first + 1);
  const uint32_t shift = static_cast<uint32_t>(first % bins);
  const uint64_t run = ((uint64_t{1} << count) - 1) << shift;  // count + shift < 2 * kMemoryBins
  return (run & field) | (run >> bins);
}

uint32_t DporSearch::choose(std::span<const sim::ReadyEvent> ready, uint64_t step) {
  if (blocked_at_ != SIZE_MAX) return 0;  // a tail already explored: run it out, record nothing
  if (step < prefix_) {
    Node& node = nodes_[step];
    bool same = node.sequences.size() == ready.size();
    size_t faults = 0;
    for (size_t a = 0; same && a < ready.size(); ++a) {
      const uint64_t key = ready[a].rank == kFaultRank ? fault_key(faults++) : ready[a].sequence;
      same = node.sequences[a] == key;
    }
    if (!same) {
      throw std::logic_error("dpor: choice point " + std::to_string(step) +
                             " differs from the one recorded; the simulator is not deterministic");
    }
  } else {
    // Exact: a state seen before is cut only where no event of this instant
    // has run yet. Races are between events due at the same time, so the cut
    // tail cannot race with this prefix, and every order from that state was
    // explored when it was first reached. A cut elsewhere can lose the
    // reversal of a prefix event with a tail event (tests/model's state cache
    // test shows one such loss).
    const bool may_cut = !exact_ || steps_.empty() || steps_.back().at_ns < ready[0].at_ns;
    if (may_cut && caching_ && fingerprint_) {
      const uint64_t fingerprint = fingerprint_();
      if (!seen_.insert(fingerprint)) {
        ++cached_;
        blocked_at_ = steps_.size();
        return 0;
      }
      if (on_new_state_) on_new_state_(fingerprint);
    }
    Node node;
    node.backtrack.assign(ready.size(), 0);
    node.done.assign(ready.size(), 0);
    size_t faults = 0;
    for (size_t a = 0; a < ready.size(); ++a) {
      const bool fault = ready[a].rank == kFaultRank;
      if (!fault) {
        node.sequences.push_back(ready[a].sequence);
        continue;
      }
      const uint64_t key = fault_key(faults++);
      node.sequences.push_back(key);
      if (!raced_fault_kind_.empty() && raced_fault_kind_ == ready[a].kind) {
        raced_fault_key_ = key;  // placed by its races (analyse_races)
      } else {
        node.backtrack[a] = 1;  // tried at every choice point where it is open
      }
    }
    node.chosen = 0;  // the first ready event (never a fault: they come last)
    node.backtrack[0] = 1;
    node.done[0] = 1;
    nodes_.push_back(std::move(node));
    prefix_ = nodes_.size();
  }
  const Node& node = nodes_[step];
  pending_node_ = static_cast<int64_t>(step);
  pending_key_ = node.sequences[node.chosen];
  return node.chosen;
}

void DporSearch::place_fault_by_races(std::string kind, const std::vector<sim::SharedObject>& objects) {
  raced_fault_kind_ = std::move(kind);
  raced_fault_bits_ = 0;
  for (const sim::SharedObject& o : objects) raced_fault_bits_ |= bits_of(o);
  raced_fault_key_ = 0;
}

void DporSearch::ran(const sim::ReadyEvent& event) {
  Step s;
  s.sequence = event.sequence;
  s.parent = event.parent;
  s.at_ns = event.at_ns;
  s.node = pending_node_;
  if (event.rank == kFaultRank) {
    // The fault itself, before the event chosen after it (RecordingScheduler
    // asks again once it has struck).
    s.fault = true;
    s.match = pending_node_ >= 0 ? pending_key_ : 0;
    s.by_races = raced_fault_key_ != 0 && s.match == raced_fault_key_;
    s.own = s.by_races ? raced_fault_bits_ : kEveryRank;
    fault_struck_ = true;
  } else {
    s.match = event.sequence;
    s.own = rank_bit(event.rank);
  }
  pending_node_ = -1;
  pending_key_ = 0;
  steps_.push_back(s);
}

void DporSearch::used(const sim::SharedObject& object) {
  if (!steps_.empty()) steps_.back().footprint |= bits_of(object);
}

// The NIC's own work: the send queue, not the rank, is what the event itself
// changes (what it reports besides, before or after, stays).
void DporSearch::nic_work_on_send_queue(uint32_t rank, uint32_t peer) {
  if (steps_.empty() || steps_.back().own == kEveryRank || steps_.back().fault) return;
  steps_.back().own = bits_of(sim::SharedObject::send_queue(rank, peer));
}

// Event j races with the earlier event i: some execution must run j before
// i, from i's choice point. The events between them that do not happen after
// i, then j, are what can be run instead of i (v, in the terms of Abdulla et
// al.'s source-DPOR, POPL 2014); any of them with nothing before it in v that
// happens before it can go first. If one of those is already explored or
// queued there, nothing is needed; otherwise queue one. Queuing j's ready
// ancestor instead can miss orders.
void DporSearch::add_backtrack(size_t node_index, size_t j, size_t i,
                               const std::vector<std::vector<uint32_t>>& clock) {
  Node& node = nodes_[node_index];
  const uint32_t width = static_cast<uint32_t>(clock[i].size());
  const uint64_t width_mask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  auto happens_before = [&](size_t a, size_t b) {  // a before b in this execution
    // Over the objects a used only (the bits of its footprint).
    for (uint64_t bits = steps_[a].footprint & width_mask; bits != 0; bits &= bits - 1) {
      const uint32_t r = static_cast<uint32_t>(std::countr_zero(bits));
      if (clock[b][r] >= clock[a][r]) return true;
    }
    return false;
  };
  std::vector<size_t> v;
  for (size_t k = i + 1; k < j; ++k) {
    if (!happens_before(i, k)) v.push_back(k);
  }
  v.push_back(j);
  auto ready_there = [&node](uint64_t match) -> size_t {
    for (size_t a = 0; a < node.sequences.size(); ++a) {
      if (node.sequences[a] == match) return a;
    }
    return node.sequences.size();
  };
  std::vector<size_t> initials;  // alternatives of the node
  for (size_t x = 0; x < v.size(); ++x) {
    bool first = true;
    for (size_t y = 0; y < x && first; ++y) first = !happens_before(v[y], v[x]);
    if (!first) continue;
    const size_t a = ready_there(steps_[v[x]].match);
    if (a < node.sequences.size()) initials.push_back(a);
  }
  if (initials.empty()) {
    // Should not happen (an initial of v is ready where i ran); explore all.
    for (size_t a = 0; a < node.sequences.size(); ++a) {
      if (!is_fault_key(node.sequences[a]) && node.done[a] == 0) node.backtrack[a] = 1;
    }
    return;
  }
  for (size_t a : initials) {
    if (node.backtrack[a] != 0 || node.done[a] != 0) return;
  }
  node.backtrack[initials.front()] = 1;
}

// A fault placed by races that never struck strikes last (see the top of
// dpor_search.h), where the execution ended or was cut.
void DporSearch::append_unstruck_fault() {
  Step f;
  f.sequence = sim::Scheduler::kInjectedSequence;
  f.match = raced_fault_key_;
  f.fault = true;
  f.by_races = true;
  f.own = raced_fault_bits_;
  f.at_ns = steps_.empty() ? 0 : steps_.back().at_ns;
  steps_.push_back(f);
}

// Per object, the last of the first `steps` steps that used it (-1: none).
std::vector<int64_t> DporSearch::last_steps_on_objects(size_t steps, uint64_t width_mask) const {
  std::vector<int64_t> last(objects_, -1);
  for (size_t k = 0; k < steps; ++k) {
    for (uint64_t bits = steps_[k].footprint & width_mask; bits != 0; bits &= bits - 1) {
      last[static_cast<uint32_t>(std::countr_zero(bits))] = static_cast<int64_t>(k);
    }
  }
  return last;
}

// Vector clocks over ranks: clock[k][r] counts the events touching r that
// happen before event k (itself included), where "happens before" is the
// order of dependent events plus "scheduled by". Event i happens before the
// scheduling of event j when clock[parent(j)][r] reaches i's position on a
// rank r that i touched.
void DporSearch::analyse_races() {
  steps_.resize(std::min(steps_.size(), blocked_at_));
  if (raced_fault_key_ != 0 && !fault_struck_) append_unstruck_fault();
  const size_t limit = steps_.size();
  for (size_t k = 0; k < limit; ++k) steps_[k].footprint |= steps_[k].own;
  const uint32_t width = objects_;
  const uint64_t width_mask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  // The steps before the choice point this execution branched at are those
  // of the execution analysed last: their clocks (kept in clocks_), their
  // entries in step_of_sequence_ and the races among them are known, so the
  // analysis starts at the first new step. Only `last` is rebuilt.
  TW_ASSERT_MSG(reuse_steps_ <= limit, "a replayed prefix is never cut");
  const size_t reused = incremental_ ? std::min(reuse_steps_, limit) : 0;
  std::vector<std::vector<uint32_t>>& clock = clocks_;
  if (clock.size() < limit) clock.resize(limit);
  for (size_t k = reused; k < limit; ++k) clock[k].assign(width, 0);
  std::vector<int64_t> last = last_steps_on_objects(reused, width_mask);
  absl::flat_hash_map<uint64_t, size_t>& index = step_of_sequence_;
  if (reused == 0) index.clear();
  const std::vector<uint32_t> zero(width, 0);
  for (size_t j = reused; j < limit; ++j) {
    const Step& sj = steps_[j];
    auto parent = sj.fault ? index.end() : index.find(sj.parent);
    const std::vector<uint32_t>& created = parent == index.end() ? zero : clock[parent->second];
    std::vector<uint32_t>& cj = clock[j];
    cj = created;
    const uint64_t used = sj.footprint & width_mask;
    auto ordered_before_j = [&](size_t i) {  // i happens before j was scheduled, on any object i used
      for (uint64_t bits = steps_[i].footprint & width_mask; bits != 0; bits &= bits - 1) {
        const uint32_t q = static_cast<uint32_t>(std::countr_zero(bits));
        if (clock[i][q] <= created[q]) return true;
      }
      return false;
    };
    for (uint64_t rest = used; rest != 0; rest &= rest - 1) {
      const uint32_t r = static_cast<uint32_t>(std::countr_zero(rest));
      if (last[r] < 0) continue;
      const size_t i = static_cast<size_t>(last[r]);
      const bool ordered = ordered_before_j(i);
      if (!ordered && steps_[i].node >= 0) {
        if (sj.by_races && !steps_[i].fault) {
          // Ready at every choice point while no fault has struck: tried
          // right there, before i, whatever the times.
          Node& node = nodes_[static_cast<size_t>(steps_[i].node)];
          for (size_t a = 0; a < node.sequences.size(); ++a) {
            if (node.sequences[a] == sj.match && node.done[a] == 0) node.backtrack[a] = 1;
          }
        } else if (steps_[i].at_ns == sj.at_ns) {
          // Two events, or a fault before an event that was ready with it
          // (the event first, the fault later).
          add_backtrack(static_cast<size_t>(steps_[i].node), j, i, clock);
        }
      }
      for (uint32_t q = 0; q < width; ++q) cj[q] = std::max(cj[q], clock[i][q]);
    }
    for (uint64_t rest = used; rest != 0; rest &= rest - 1) {
      const uint32_t r = static_cast<uint32_t>(std::countr_zero(rest));
      cj[r] += 1;
      last[r] = static_cast<int64_t>(j);
    }
    index[sj.sequence] = j;
  }
}

bool DporSearch::next_execution() {
  analyse_races();
  if (first_execution_ && share_count_ > 1) drop_others_shares();
  first_execution_ = false;
  pending_node_ = -1;
  pending_key_ = 0;
  fault_struck_ = false;
  blocked_at_ = SIZE_MAX;
  // The deepest choice point with an alternative left.
  for (size_t n = nodes_.size(); n-- > 0;) {
    Node& node = nodes_[n];
    for (size_t a = 0; a < node.sequences.size(); ++a) {
      if (node.backtrack[a] == 0 || node.done[a] != 0) continue;
      node.done[a] = 1;
      node.chosen = static_cast<uint32_t>(a);
      nodes_.resize(n + 1);
      prefix_ = n + 1;
      keep_analysis_before(n);
      return true;
    }
  }
  nodes_.clear();
  prefix_ = 0;
  steps_.clear();
  reuse_steps_ = 0;
  return false;
}

// The next execution replays this one's steps up to the event chosen at
// choice point `node`, then takes another: what analyse_races knows of the
// steps before that one holds for the next execution too. The index of
// steps by sequence forgets the later ones (a fault's steps share one
// sequence: the index keeps the last one before the branch, as the full
// analysis would have it there).
void DporSearch::keep_analysis_before(size_t node) {
  size_t branch = 0;
  while (branch < steps_.size() && steps_[branch].node != static_cast<int64_t>(node)) ++branch;
  TW_ASSERT_MSG(branch < steps_.size(), "a choice point of the path has its step");
  for (size_t k = branch; k < steps_.size(); ++k) step_of_sequence_.erase(steps_[k].sequence);
  for (size_t k = 0; k < branch; ++k) {
    if (steps_[k].fault) step_of_sequence_[steps_[k].sequence] = k;
  }
  reuse_steps_ = branch;
  steps_.clear();
}

std::vector<uint32_t> DporSearch::current_prefix() const {
  std::vector<uint32_t> prefix;
  prefix.reserve(prefix_);
  for (size_t n = 0; n < prefix_; ++n) prefix.push_back(nodes_[n].chosen);
  return prefix;
}

std::vector<std::vector<uint32_t>> DporSearch::pending_prefixes(size_t limit) const {
  std::vector<std::vector<uint32_t>> out;
  // next_execution's order: the deepest choice point first, then by index.
  for (size_t n = nodes_.size(); n-- > 0 && out.size() < limit;) {
    const Node& node = nodes_[n];
    for (size_t a = 0; a < node.sequences.size() && out.size() < limit; ++a) {
      if (node.backtrack[a] == 0 || node.done[a] != 0) continue;
      std::vector<uint32_t> prefix;
      prefix.reserve(n + 1);
      for (size_t m = 0; m < n; ++m) prefix.push_back(nodes_[m].chosen);
      prefix.push_back(static_cast<uint32_t>(a));
      out.push_back(std::move(prefix));
    }
  }
  return out;
}

// The alternatives the first execution left are dealt out by a hash of
// their prefix (the choices before and at their choice point): the same
// in every shard, since every shard ran the same first execution.
void DporSearch::drop_others_shares() {
  uint64_t h = 0x51ed270b5a1d3c47ull;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    Node& node = nodes_[n];
    for (size_t a = 0; a < node.sequences.size(); ++a) {
      if (node.backtrack[a] == 0 || node.done[a] != 0) continue;
      uint64_t state = h ^ (a * 0x9e3779b97f4a7c15ull);
      if (splitmix64(state) % share_count_ != share_index_) node.done[a] = 1;
    }
    h = (h ^ node.chosen) * 0x100000001b3ull;  // the path so far: first execution's choices
  }
}

}  // namespace tensorwire::model
