// NIC ports and the bytes in flight on them. Every node has one full-duplex
// port: a transmit side and a receive side, each with the configured bandwidth.
// A flow occupies the sender's tx side and the receiver's rx side; the sides
// are shared max-min fairly (max_min_rates.h): capacity a flow cannot use,
// because it is limited at its other end, goes to the flows that can. When a
// flow starts or ends, the rates of the flows connected to it through shared
// sides are solved again, and only the flows whose rate changed are settled
// and get their end event moved.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend_sim/max_min_rates.h"
#include "backend_sim/sim_context.h"

namespace tensorwire::sim {

using FlowId = uint32_t;

class FairSharePorts {
 public:
  FairSharePorts(SimContext& context, uint32_t nodes, double bandwidth_bytes_per_s);

  // Starts moving `bytes` from `src` to `dst` now; `on_drained` runs (as an
  // event of rank `src`) when the last byte has left the sender's port.
  FlowId start(uint32_t src, uint32_t dst, uint64_t bytes, EventCallback on_drained);
  // Stops a flow without running its callback (its QP broke).
  void cancel(FlowId flow);

  size_t tx_flows(uint32_t node) const { return tx_[node].size(); }
  size_t rx_flows(uint32_t node) const { return rx_[node].size(); }

 private:
  struct Flow {
    uint32_t src = 0;
    uint32_t dst = 0;
    double remaining_bytes = 0;
    double rate_bytes_per_s = 0;
    TimeNs last_update_ns = 0;
    EventId finish;
    EventCallback on_drained;
    uint64_t mark = 0;  // last recompute pass that touched it
    uint32_t rate_index = 0;  // its index in the last solve that reached it
    bool live = false;
  };
  void recompute(uint32_t src, uint32_t dst);
  void settle(Flow& f);
  void update(FlowId id, double rate);
  void collect_component(uint32_t src, uint32_t dst);
  uint32_t resource_of(uint32_t node, bool tx) const { return tx ? node : nodes_ + node; }
  const std::vector<FlowId>& flows_on(uint32_t resource) const {
    return resource < nodes_ ? tx_[resource] : rx_[resource - nodes_];
  }
  double side_rate(const std::vector<FlowId>& flows) const;
  void trace_utilisation(uint32_t src, uint32_t dst);
  void finish(FlowId id);
  void detach(FlowId id);

  SimContext& context_;
  uint32_t nodes_;
  double bandwidth_bytes_per_s_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_;
  std::vector<std::vector<FlowId>> tx_;  // per node: flows on its tx side
  std::vector<std::vector<FlowId>> rx_;  // per node: flows on its rx side
  uint64_t pass_ = 0;
  // Scratch of recompute: the flows and port sides (tx n: n, rx n: nodes + n)
  // connected to the changed ones, the last pass that reached each side, and
  // each side's index in the solver.
  std::vector<FlowId> component_;
  std::vector<uint32_t> component_resources_;
  std::vector<uint64_t> resource_pass_;
  std::vector<uint32_t> solver_index_;
  MaxMinRates solver_;
  // The utilisation last written to the trace, per node (tracing only).
  std::vector<double> tx_utilisation_;
  std::vector<double> rx_utilisation_;
  std::vector<uint64_t> tx_traced_pass_;  // the recompute pass that last wrote each side
  std::vector<uint64_t> rx_traced_pass_;
  std::vector<std::string> tx_track_names_;  // "node3/nic tx", made when first traced
  std::vector<std::string> rx_track_names_;
};

}  // namespace tensorwire::sim
