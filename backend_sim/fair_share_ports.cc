#include "backend_sim/fair_share_ports.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/assert.h"

namespace tensorwire::sim {

FairSharePorts::FairSharePorts(SimContext& context, uint32_t nodes, double bandwidth_bytes_per_s)
    : context_(context), nodes_(nodes), bandwidth_bytes_per_s_(bandwidth_bytes_per_s), tx_(nodes),
      rx_(nodes), resource_pass_(size_t{2} * nodes, 0), solver_index_(size_t{2} * nodes, 0),
      tx_utilisation_(nodes, 0.0), rx_utilisation_(nodes, 0.0), tx_traced_pass_(nodes, 0),
      rx_traced_pass_(nodes, 0) {
  // The simulator validated the cluster: every share of a port is positive.
  TW_ASSERT_HOT_MSG(bandwidth_bytes_per_s_ > 0, "a port's bandwidth is positive");
}

FlowId FairSharePorts::start(uint32_t src, uint32_t dst, uint64_t bytes,
                             EventCallback on_drained) {
  TW_ASSERT_HOT(src < tx_.size() && dst < rx_.size());
  TW_ASSERT_HOT_MSG(src != dst, "a flow crosses the network: no queue pair connects a rank to itself");
  FlowId id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
  TW_ASSERT_HOT_MSG(!f.live, "a flow id is reused only once its flow ended");
  f = Flow{};
  f.src = src;
  f.dst = dst;
  f.remaining_bytes = static_cast<double>(bytes);
  f.last_update_ns = context_.now();
  f.on_drained = std::move(on_drained);
  f.live = true;
  tx_[src].push_back(id);
  rx_[dst].push_back(id);
  recompute(src, dst);
  return id;
}

void FairSharePorts::cancel(FlowId id) {
  if (id >= flows_.size() || !flows_[id].live) return;
  const uint32_t src = flows_[id].src, dst = flows_[id].dst;
  settle(flows_[id]);  // what it moved before it stopped
  detach(id);
  recompute(src, dst);
}

void FairSharePorts::detach(FlowId id) {
  Flow& f = flows_[id];
  context_.events.cancel(f.finish);
  auto erase = [id](std::vector<FlowId>& v) {
    auto it = std::find(v.begin(), v.end(), id);
    TW_ASSERT_HOT_MSG(it != v.end(), "a live flow is on its sender's tx and its receiver's rx side");
    v.erase(it);  // keep start order: recompute order fixes event order
  };
  TW_ASSERT_HOT(f.live);
  erase(tx_[f.src]);
  erase(rx_[f.dst]);
  f.live = false;
  f.on_drained.reset();
  free_.push_back(id);
}

// Moves the flow's progress up to now at its current rate, and counts the
// bytes moved against both port sides.
void FairSharePorts::settle(Flow& f) {
  const TimeNs now = context_.now();
  TW_ASSERT_HOT_MSG(now >= f.last_update_ns, "a flow's progress is settled forward in time");
  const double elapsed_s = static_cast<double>(now - f.last_update_ns) * 1e-9;
  // Rounding may drain a flow slightly past zero: the bytes in flight never go negative.
  const double moved = std::min(f.remaining_bytes, f.rate_bytes_per_s * elapsed_s);
  f.remaining_bytes -= moved;
  f.last_update_ns = now;
  context_.meter.add_port_bytes(f.src, f.dst, moved);
}

// Settles progress at the old rate, then sets the new rate and end event; a
// flow whose rate did not change keeps its event.
void FairSharePorts::update(FlowId id, double rate) {
  Flow& f = flows_[id];
  TW_ASSERT_HOT(f.live);
  TW_ASSERT_HOT_MSG(rate > 0, "a flow's rate is positive");
  // A rate that moved by rounding only (one share reached along two paths
  // of the solve) keeps its event: rescheduling it would change nothing but
  // the order of ties.
  const bool same_rate = std::abs(rate - f.rate_bytes_per_s) <= 1e-12 * rate;
  if (same_rate && context_.events.is_pending(f.finish)) return;
  const TimeNs now = context_.now();
  settle(f);
  f.rate_bytes_per_s = rate;
  if (context_.events.is_pending(f.finish)) {
    // Another flow's end moves: the running event depends on that flow's
    // queue pair (partial-order reduction must not commute the two).
    context_.events.touch(f.src);
    context_.events.use(SharedObject::send_queue(f.src, f.dst));
  }
  context_.events.cancel(f.finish);
  f.finish = context_.events.schedule_at(now + transfer_time_ns(f.remaining_bytes, rate), f.src,
                                         "transfer", f.dst, [this, id] { finish(id); });
}

// Every flow and port side reachable from src's tx and dst's rx through
// shared sides: only their rates can change when a flow there starts or ends.
void FairSharePorts::collect_component(uint32_t src, uint32_t dst) {
  component_.clear();
  component_resources_.clear();
  solver_.clear();
  auto reach = [this](uint32_t resource) {
    if (resource_pass_[resource] == pass_) return;
    resource_pass_[resource] = pass_;
    solver_index_[resource] = solver_.add_resource(bandwidth_bytes_per_s_);
    component_resources_.push_back(resource);
  };
  reach(resource_of(src, true));
  reach(resource_of(dst, false));
  for (size_t next = 0; next < component_resources_.size(); ++next) {
    for (FlowId id : flows_on(component_resources_[next])) {
      Flow& f = flows_[id];
      if (f.mark == pass_) continue;
      f.mark = pass_;
      component_.push_back(id);
      reach(resource_of(f.src, true));
      reach(resource_of(f.dst, false));
    }
  }
  for (FlowId id : component_) {
    const Flow& f = flows_[id];
    const uint32_t sides[2] = {solver_index_[resource_of(f.src, true)],
                               solver_index_[resource_of(f.dst, false)]};
    solver_.add_flow(sides);
  }
}

void FairSharePorts::recompute(uint32_t src, uint32_t dst) {
  ++pass_;
  // No contention, the common case: both sides idle, or one flow alone on
  // both, which has the whole bandwidth (what the solve would give).
  const std::vector<FlowId>& tx = tx_[src];
  const std::vector<FlowId>& rx = rx_[dst];
  if (tx.size() + rx.size() == 0 || (tx.size() == 1 && rx.size() == 1 && tx[0] == rx[0])) {
    component_.assign(tx.begin(), tx.end());
    component_resources_.assign({resource_of(src, true), resource_of(dst, false)});
    if (!tx.empty()) update(tx[0], bandwidth_bytes_per_s_);
    if (context_.tracing) trace_utilisation(src, dst);
    return;
  }
  collect_component(src, dst);
  const std::vector<double>& rates = solver_.solve();
  // Flows are updated in the order the single-switch model always used (src's
  // tx side, then dst's rx side, each in start order, then the rest as
  // reached): the order of their rescheduled end events, and so of ties,
  // stays the same wherever the rates do.
  ++pass_;
  for (size_t i = 0; i < component_.size(); ++i) flows_[component_[i]].rate_index = static_cast<uint32_t>(i);
  auto visit = [&](FlowId id) {
    Flow& f = flows_[id];
    if (f.mark == pass_) return;
    f.mark = pass_;
    update(id, rates[f.rate_index]);
  };
  for (FlowId id : tx_[src]) visit(id);
  for (FlowId id : rx_[dst]) visit(id);
  for (FlowId id : component_) visit(id);
  if (context_.tracing) trace_utilisation(src, dst);
}

double FairSharePorts::side_rate(const std::vector<FlowId>& flows) const {
  double rate = 0;
  for (FlowId id : flows) rate += flows_[id].rate_bytes_per_s;
  return rate;
}

// A counter per port side, its share of the bandwidth in use, written when it
// changes: every side a flow of this pass runs over may have changed (the
// rates of flows on src's tx and dst's rx moved, and with them their other sides).
void FairSharePorts::trace_utilisation(uint32_t src, uint32_t dst) {
  auto emit = [this](uint32_t node, bool tx) {
    // Once per side and pass: many flows of this pass may share a side.
    std::vector<uint64_t>& seen = tx ? tx_traced_pass_ : rx_traced_pass_;
    if (seen[node] == pass_) return;
    seen[node] = pass_;
    std::vector<double>& last = tx ? tx_utilisation_ : rx_utilisation_;
    const double now_value = side_rate(tx ? tx_[node] : rx_[node]) / bandwidth_bytes_per_s_;
    if (now_value == last[node]) return;
    last[node] = now_value;
    std::vector<std::string>& names = tx ? tx_track_names_ : rx_track_names_;
    if (names.empty()) {
      for (size_t n = 0; n < tx_.size(); ++n) {
        names.push_back("node" + std::to_string(n) + (tx ? "/nic tx" : "/nic rx"));
      }
    }
    context_.trace.counter(names[node], context_.now(), now_value);
  };
  emit(src, true);
  emit(dst, false);
  for (FlowId id : tx_[src]) emit(flows_[id].dst, false);
  for (FlowId id : rx_[dst]) emit(flows_[id].src, true);
  // Max-min may move rates further away, anywhere in the component.
  for (uint32_t resource : component_resources_) {
    emit(resource < nodes_ ? resource : resource - nodes_, resource < nodes_);
  }
}

void FairSharePorts::finish(FlowId id) {
  Flow& f = flows_[id];
  TW_ASSERT_HOT_MSG(f.live, "a cancelled flow's end event never runs");
  const uint32_t src = f.src, dst = f.dst;
  // Its end event was set for the moment its last byte leaves.
  context_.meter.add_port_bytes(src, dst, f.remaining_bytes);
  f.remaining_bytes = 0;
  EventCallback done = std::move(f.on_drained);
  f.finish = {};
  detach(id);
  recompute(src, dst);
  if (done) done();
}

}  // namespace tensorwire::sim
