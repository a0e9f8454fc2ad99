// NIC ports and the bytes in flight on them. Every node has one full-duplex
// port: a transmit side and a receive side, each with the configured bandwidth.
// A flow occupies the sender's tx side and the receiver's rx side; while n
// flows share a side, each gets at most bandwidth/n of it, so a flow moves at
// min(tx_bw / n_tx, rx_bw / n_rx). Rates are recomputed whenever a flow starts
// or ends on either side, and its end event is moved accordingly.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend_sim/sim_context.h"

namespace tensorwire::sim {

using FlowId = uint32_t;

class FairSharePorts {
 public:
  FairSharePorts(SimContext& context, uint32_t nodes, double bandwidth_bytes_per_s);

  // Starts moving `bytes` from `src` to `dst` now; `on_drained` runs (as an
  // event of rank `src`) when the last byte has left the sender's port.
  FlowId start(uint32_t src, uint32_t dst, uint64_t bytes, std::function<void()> on_drained);
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
    std::function<void()> on_drained;
    uint64_t mark = 0;  // last recompute pass that touched it
    bool live = false;
  };
  void recompute(uint32_t src, uint32_t dst);
  void settle(Flow& f);
  void update(FlowId id);
  double side_rate(const std::vector<FlowId>& flows) const;
  void trace_utilisation(uint32_t src, uint32_t dst);
  void finish(FlowId id);
  void detach(FlowId id);

  SimContext& context_;
  double bandwidth_bytes_per_s_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_;
  std::vector<std::vector<FlowId>> tx_;  // per node: flows on its tx side
  std::vector<std::vector<FlowId>> rx_;  // per node: flows on its rx side
  uint64_t pass_ = 0;
  // The utilisation last written to the trace, per node (tracing only).
  std::vector<double> tx_utilisation_;
  std::vector<double> rx_utilisation_;
  std::vector<uint64_t> tx_traced_pass_;  // the recompute pass that last wrote each side
  std::vector<uint64_t> rx_traced_pass_;
  std::vector<std::string> tx_track_names_;  // "node3/nic tx", made when first traced
  std::vector<std::string> rx_track_names_;
};

}  // namespace tensorwire::sim
