// The bytes in flight on the fabric's resources (backend_sim/fabric.h): every
// NIC's transmit and receive side and, beyond a star, every switch-to-switch
// link. A flow occupies every resource of its route; the resources are shared
// max-min fairly (max_min_rates.h): capacity a flow cannot use, because it is
// limited elsewhere on its route, goes to the flows that can. When a flow
// starts or ends, the rates of the flows connected to it through shared
// resources are solved again, and only the flows whose rate changed are
// settled and get their end event moved.
//
// A plain simulation solves once per instant, not once per change: flows
// start and end in bursts at one simulated time (a parameter server's
// workers all pushing one tensor, every flow of an all-to-all ending
// together), and rates that hold for no time move no bytes. So a contended
// change marks its route and the solve runs when the event queue reaches the
// end of the instant (EventQueue::request_instant_end), over every route
// marked. Under a model checker, which orders every event, each change is
// solved at once as before.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backend_sim/fabric.h"
#include "backend_sim/max_min_rates.h"
#include "backend_sim/sim_context.h"

namespace tensorwire::sim {

using FlowId = uint32_t;

class FairSharePorts {
 public:
  FairSharePorts(SimContext& context, const Fabric& fabric);
  ~FairSharePorts();
  FairSharePorts(const FairSharePorts&) = delete;
  FairSharePorts& operator=(const FairSharePorts&) = delete;

  // Starts moving `bytes` from `src` to `dst` now; `on_drained` runs (as an
  // event of rank `src`) when the last byte has left the sender's port.
  FlowId start(uint32_t src, uint32_t dst, uint64_t bytes, EventCallback on_drained);
  // Stops a flow without running its callback (its QP broke).
  void cancel(FlowId flow);

  // Flows crossing a resource (Fabric numbering) now.
  size_t flows_on_resource(uint32_t resource) const {
    return flows_on_[resource].size() - gone_on_[resource];
  }
  // Max-min solves run so far (a lone flow's rate needs none).
  uint64_t solves() const { return solves_; }

 private:
  struct Flow {
    uint32_t src = 0;
    uint32_t dst = 0;
    Route route;
    double remaining_bytes = 0;
    double rate_bytes_per_s = 0;
    TimeNs last_update_ns = 0;
    EventId finish;
    EventCallback on_drained;
    uint64_t mark = 0;  // last recompute pass that touched it
    uint32_t rate_index = 0;  // its index in the last solve that reached it
    // Its place in flows_on_ of each resource of its route (hop by hop).
    std::array<uint32_t, Route::kMaxHops> place_on{};
    bool live = false;
  };
  // An ended flow's place in flows_on_, until the list is compacted.
  static constexpr FlowId kGone = UINT32_MAX;
  // Calls f(id) for each flow on `resource`, in start order.
  template <typename F>
  void for_each_on(uint32_t resource, F&& f) const {
    for (FlowId id : flows_on_[resource]) {
      if (id != kGone) f(id);
    }
  }
  FlowId first_on(uint32_t resource) const;  // kGone when none
  void leave(uint32_t resource, uint32_t place);
  void compact(uint32_t resource);
  void recompute(const Route& route);
  // The flow just started and is alone on every resource of its route.
  void start_alone(FlowId id);
  bool route_idle(const Route& route) const;  // no flow on any resource of it
  double narrowest(const Route& route) const;
  void solve_from(std::span<const uint32_t> changed);
  void solve_at_instant_end();
  bool alone_on(const Route& route) const;
  void settle(Flow& f);
  void update(FlowId id, double rate);
  void collect_component(std::span<const uint32_t> changed);
  double resource_rate(uint32_t resource) const;
  void trace_utilisation(std::span<const uint32_t> changed);
  void finish(FlowId id);
  void detach(FlowId id);

  SimContext& context_;
  const Fabric& fabric_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_;
  // Per resource, the flows on it in start order (which fixes the order of
  // their rescheduled end events). An ended flow leaves kGone in its place,
  // and a list is compacted once more than half of it is gone: at a
  // parameter server's NIC thousands of flows share a side, and erasing
  // each from the middle as it ended moved the rest every time.
  std::vector<std::vector<FlowId>> flows_on_;
  std::vector<uint32_t> gone_on_;  // per resource: kGone entries in flows_on_
  uint64_t pass_ = 0;
  uint64_t solves_ = 0;
  // Scratch of recompute: the flows and resources connected to the changed
  // ones, the last pass that reached each resource, and each resource's
  // index in the solver.
  std::vector<FlowId> component_;
  std::vector<uint32_t> component_resources_;
  std::vector<uint64_t> resource_pass_;
  std::vector<uint32_t> solver_index_;
  MaxMinRates solver_;
  // Resources of the routes changed since the last solve, in the order they
  // changed (a plain simulation, which solves at the instant's end).
  std::vector<uint32_t> changed_resources_;
  std::vector<bool> changed_;  // per resource: in changed_resources_
  // The utilisation last written to the trace, per resource (tracing only).
  std::vector<double> utilisation_;
  std::vector<uint64_t> traced_pass_;  // the recompute pass that last wrote each resource
  std::vector<std::string> track_names_;  // "node3/nic tx", made when first traced
};

}  // namespace tensorwire::sim
