#include "backend_sim/fair_share_ports.h"

#include <algorithm>
#include <utility>

namespace tensorwire::sim {

FairSharePorts::FairSharePorts(SimContext& context, uint32_t nodes, double bandwidth_bytes_per_s)
    : context_(context), bandwidth_bytes_per_s_(bandwidth_bytes_per_s), tx_(nodes), rx_(nodes) {}

FlowId FairSharePorts::start(uint32_t src, uint32_t dst, uint64_t bytes,
                             std::function<void()> on_drained) {
  FlowId id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
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
  detach(id);
  recompute(src, dst);
}

void FairSharePorts::detach(FlowId id) {
  Flow& f = flows_[id];
  context_.events.cancel(f.finish);
  auto erase = [id](std::vector<FlowId>& v) {
    auto it = std::find(v.begin(), v.end(), id);
    if (it != v.end()) v.erase(it);  // keep start order: recompute order fixes event order
  };
  erase(tx_[f.src]);
  erase(rx_[f.dst]);
  f.live = false;
  f.on_drained = nullptr;
  free_.push_back(id);
}

// Settles progress at the old rate, then sets the new rate and end event.
void FairSharePorts::update(FlowId id) {
  Flow& f = flows_[id];
  const TimeNs now = context_.now();
  const double elapsed_s = static_cast<double>(now - f.last_update_ns) * 1e-9;
  f.remaining_bytes = std::max(0.0, f.remaining_bytes - f.rate_bytes_per_s * elapsed_s);
  f.last_update_ns = now;
  const double tx_share = bandwidth_bytes_per_s_ / static_cast<double>(tx_[f.src].size());
  const double rx_share = bandwidth_bytes_per_s_ / static_cast<double>(rx_[f.dst].size());
  const double rate = std::min(tx_share, rx_share);
  if (rate == f.rate_bytes_per_s && context_.events.is_pending(f.finish)) return;
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

void FairSharePorts::recompute(uint32_t src, uint32_t dst) {
  ++pass_;
  auto visit = [this](const std::vector<FlowId>& flows) {
    for (FlowId id : flows) {
      if (flows_[id].mark == pass_) continue;
      flows_[id].mark = pass_;
      update(id);
    }
  };
  visit(tx_[src]);
  visit(rx_[dst]);
}

void FairSharePorts::finish(FlowId id) {
  Flow& f = flows_[id];
  const uint32_t src = f.src, dst = f.dst;
  std::function<void()> done = std::move(f.on_drained);
  f.finish = {};
  detach(id);
  recompute(src, dst);
  if (done) done();
}

}  // namespace tensorwire::sim
