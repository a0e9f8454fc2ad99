#include "backend_sim/fair_share_ports.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "core/assert.h"

namespace tensorwire::sim {

FairSharePorts::FairSharePorts(SimContext& context, const Fabric& fabric)
    : context_(context), fabric_(fabric), flows_on_(fabric.resource_count()),
      gone_on_(fabric.resource_count(), 0),
      resource_pass_(fabric.resource_count(), 0), solver_index_(fabric.resource_count(), 0),
      changed_(fabric.resource_count(), false), utilisation_(fabric.resource_count(), 0.0),
      traced_pass_(fabric.resource_count(), 0) {
  // The simulator validated the cluster: every share of a resource is positive.
  for (uint32_t r = 0; r < fabric.resource_count(); ++r) {
    TW_ASSERT_MSG(fabric.capacity(r) > 0, "a resource's bandwidth is positive");
  }
  context_.events.set_instant_end_hook([this] { solve_at_instant_end(); });
}

FairSharePorts::~FairSharePorts() { context_.events.set_instant_end_hook({}); }

FlowId FairSharePorts::start(uint32_t src, uint32_t dst, uint64_t bytes,
                             EventCallback on_drained) {
  TW_ASSERT_HOT(src < fabric_.nodes() && dst < fabric_.nodes());
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
  TW_ASSERT_HOT_MSG(!f.on_drained, "an ended flow keeps no callback");
  // Field by field: assigning a fresh Flow{} zeroed all of it through a
  // temporary, a tenth of a raw write's cost in BM_SimulatorEventLoop.
  f.src = src;
  f.dst = dst;
  f.route = fabric_.route(src, dst);
  f.remaining_bytes = static_cast<double>(bytes);
  f.rate_bytes_per_s = 0;
  f.last_update_ns = context_.now();
  f.finish = {};
  f.on_drained = std::move(on_drained);
  f.mark = 0;
  f.rate_index = 0;
  f.live = true;
  bool alone = true;
  for (uint32_t h = 0; h < f.route.hops; ++h) {
    // A route never crosses a resource twice (Fabric::route): each hop has one place.
    TW_ASSERT_HOT(std::count(f.route.resources.begin(), f.route.resources.begin() + f.route.hops,
                             f.route.resources[h]) == 1);
    std::vector<FlowId>& on = flows_on_[f.route.resources[h]];
    alone = alone && on.empty();
    f.place_on[h] = static_cast<uint32_t>(on.size());
    on.push_back(id);
  }
  if (alone && !context_.tracing) {
    start_alone(id);
  } else {
    recompute(f.route);
  }
  return id;
}

// What recompute() does for a flow that starts on an idle route, without its
// search for the flows sharing it: the flow has its route's narrowest
// resource, it moved nothing yet, and it has no end event to move. (Tracing
// takes recompute(), which writes the resources' utilisation.)
void FairSharePorts::start_alone(FlowId id) {
  Flow& f = flows_[id];
  TW_ASSERT_HOT(f.live && !context_.events.is_pending(f.finish) && f.rate_bytes_per_s == 0);
  for (uint32_t r : f.route.resource_span()) {
    TW_ASSERT_HOT_MSG(flows_on_resource(r) == 1, "a flow alone on its route");
  }
  const double rate = narrowest(f.route);
  TW_ASSERT_HOT_MSG(rate > 0, "a flow's rate is positive");
  f.rate_bytes_per_s = rate;
  f.finish = context_.events.schedule_at(context_.now() + transfer_time_ns(f.remaining_bytes, rate),
                                         f.src, "transfer", f.dst, [this, id] { finish(id); });
}

// What a flow alone on `route` runs at: its narrowest resource.
double FairSharePorts::narrowest(const Route& route) const {
  double rate = fabric_.capacity(route.resources[0]);
  for (uint32_t r : route.resource_span()) rate = std::min(rate, fabric_.capacity(r));
  return rate;
}

bool FairSharePorts::route_idle(const Route& route) const {
  for (uint32_t r : route.resource_span()) {
    if (flows_on_resource(r) != 0) return false;
  }
  return true;
}

void FairSharePorts::cancel(FlowId id) {
  if (id >= flows_.size() || !flows_[id].live) return;
  const Route route = flows_[id].route;
  settle(flows_[id]);  // what it moved before it stopped
  detach(id);
  recompute(route);
}

void FairSharePorts::detach(FlowId id) {
  Flow& f = flows_[id];
  // A flow that finished has no end event left (finish() cleared it).
  if (f.finish.valid()) context_.events.cancel(f.finish);
  TW_ASSERT_HOT(f.live);
  for (uint32_t h = 0; h < f.route.hops; ++h) {
    const uint32_t r = f.route.resources[h];
    TW_ASSERT_HOT_MSG(flows_on_[r][f.place_on[h]] == id, "a live flow is on every resource of its route");
    leave(r, f.place_on[h]);
  }
  f.live = false;
  f.on_drained.reset();
  free_.push_back(id);
}

void FairSharePorts::leave(uint32_t resource, uint32_t place) {
  std::vector<FlowId>& on = flows_on_[resource];
  on[place] = kGone;
  const uint32_t gone = ++gone_on_[resource];
  if (gone == on.size()) {
    // The last flow left (a lone flow, most often): nothing to keep in order.
    on.clear();
    gone_on_[resource] = 0;
  } else if (gone * 2 > on.size()) {
    compact(resource);
  }
}

// Drops the ended flows' places, keeping the start order of the others.
void FairSharePorts::compact(uint32_t resource) {
  std::vector<FlowId>& on = flows_on_[resource];
  size_t kept = 0;
  for (FlowId id : on) {
    if (id == kGone) continue;
    Flow& f = flows_[id];
    uint32_t h = 0;
    while (h < f.route.hops && f.route.resources[h] != resource) ++h;
    TW_ASSERT_HOT_MSG(h < f.route.hops, "a flow on a resource has it on its route");
    f.place_on[h] = static_cast<uint32_t>(kept);
    on[kept++] = id;
  }
  on.resize(kept);
  gone_on_[resource] = 0;
}

FlowId FairSharePorts::first_on(uint32_t resource) const {
  for (FlowId id : flows_on_[resource]) {
    if (id != kGone) return id;
  }
  return kGone;
}

// Moves the flow's progress up to now at its current rate, and counts the
// bytes moved against every resource of its route.
void FairSharePorts::settle(Flow& f) {
  const TimeNs now = context_.now();
  TW_ASSERT_HOT_MSG(now >= f.last_update_ns, "a flow's progress is settled forward in time");
  const double elapsed_s = static_cast<double>(now - f.last_update_ns) * 1e-9;
  // Rounding may drain a flow slightly past zero: the bytes in flight never go negative.
  const double moved = std::min(f.remaining_bytes, f.rate_bytes_per_s * elapsed_s);
  f.remaining_bytes -= moved;
  f.last_update_ns = now;
  if (moved > 0) context_.meter.add_route_bytes(f.route.resource_span(), moved);
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
    context_.events.cancel(f.finish);
  }
  f.finish = context_.events.schedule_at(now + transfer_time_ns(f.remaining_bytes, rate), f.src,
                                         "transfer", f.dst, [this, id] { finish(id); });
}

// Every flow and resource reachable from the route's resources through
// shared resources: only their rates can change when a flow there starts or ends.
void FairSharePorts::collect_component(std::span<const uint32_t> changed) {
  component_.clear();
  component_resources_.clear();
  solver_.clear();
  auto reach = [this](uint32_t resource) {
    if (resource_pass_[resource] == pass_) return;
    resource_pass_[resource] = pass_;
    solver_index_[resource] = solver_.add_resource(fabric_.capacity(resource));
    component_resources_.push_back(resource);
  };
  for (uint32_t r : changed) reach(r);
  for (size_t next = 0; next < component_resources_.size(); ++next) {
    for_each_on(component_resources_[next], [&](FlowId id) {
      Flow& f = flows_[id];
      if (f.mark == pass_) return;
      f.mark = pass_;
      component_.push_back(id);
      for (uint32_t r : f.route.resource_span()) reach(r);
    });
  }
  std::array<uint32_t, Route::kMaxHops> hops{};
  for (FlowId id : component_) {
    const Route& r = flows_[id].route;
    for (uint32_t h = 0; h < r.hops; ++h) hops[h] = solver_index_[r.resources[h]];
    solver_.add_flow(std::span<const uint32_t>(hops.data(), r.hops));
  }
}

// No contention, the common case: the route idle, or one flow alone on every
// resource of it.
bool FairSharePorts::alone_on(const Route& route) const {
  const size_t count = flows_on_resource(route.resources[0]);
  if (count > 1) return false;
  const FlowId first = count == 0 ? kGone : first_on(route.resources[0]);
  for (uint32_t r : route.resource_span()) {
    if (flows_on_resource(r) != count || (count == 1 && first_on(r) != first)) return false;
  }
  return true;
}

void FairSharePorts::recompute(const Route& route) {
  ++pass_;
  const std::span<const uint32_t> hops = route.resource_span();
  if (alone_on(route)) {
    // The lone flow has its route's narrowest resource (what the solve would
    // give, whatever else changes in this instant).
    if (const FlowId first = first_on(hops[0]); first != kGone) {
      update(first, narrowest(route));
    }
    if (context_.tracing) {
      component_resources_.assign(hops.begin(), hops.end());  // what trace_utilisation reads
      trace_utilisation(hops);
    }
    return;
  }
  if (context_.events.digesting()) {
    solve_from(hops);
    return;
  }
  if (changed_resources_.empty()) context_.events.request_instant_end();
  for (uint32_t r : hops) {
    if (changed_[r]) continue;
    changed_[r] = true;
    changed_resources_.push_back(r);
  }
}

// Every change of this instant solved at once: the rates that held between
// them held for no time.
void FairSharePorts::solve_at_instant_end() {
  TW_ASSERT_HOT_MSG(!changed_resources_.empty(), "the instant's end was asked for by a change");
  ++pass_;
  solve_from(changed_resources_);
  for (uint32_t r : changed_resources_) changed_[r] = false;
  changed_resources_.clear();
}

void FairSharePorts::solve_from(std::span<const uint32_t> changed) {
  ++solves_;
  collect_component(changed);
  const std::vector<double>& rates = solver_.solve();
  // Flows are updated in the order the single-switch model always used (the
  // changed resources in order: src's tx side, ..., dst's rx side, each in
  // start order, then the rest as reached): the order of their rescheduled
  // end events, and so of ties, stays the same wherever the rates do.
  ++pass_;
  for (size_t i = 0; i < component_.size(); ++i) flows_[component_[i]].rate_index = static_cast<uint32_t>(i);
  auto visit = [&](FlowId id) {
    Flow& f = flows_[id];
    if (f.mark == pass_) return;
    f.mark = pass_;
    update(id, rates[f.rate_index]);
  };
  for (uint32_t r : changed) {
    for_each_on(r, visit);
  }
  for (FlowId id : component_) visit(id);
  if (context_.tracing) trace_utilisation(changed);
}

double FairSharePorts::resource_rate(uint32_t resource) const {
  double rate = 0;
  for_each_on(resource, [&](FlowId id) { rate += flows_[id].rate_bytes_per_s; });
  return rate;
}

// A counter per resource, its share of the bandwidth in use, written when it
// changes: every resource a flow of this pass runs over may have changed (the
// rates of flows on the route moved, and with them their other resources).
void FairSharePorts::trace_utilisation(std::span<const uint32_t> changed) {
  auto emit = [this](uint32_t resource) {
    // Once per resource and pass: many flows of this pass may share one.
    if (traced_pass_[resource] == pass_) return;
    traced_pass_[resource] = pass_;
    const double now_value = resource_rate(resource) / fabric_.capacity(resource);
    if (now_value == utilisation_[resource]) return;
    utilisation_[resource] = now_value;
    if (track_names_.empty()) {
      for (uint32_t r = 0; r < fabric_.resource_count(); ++r) {
        track_names_.push_back(fabric_.resource_name(r));
      }
    }
    context_.trace.counter(track_names_[resource], context_.now(), now_value);
  };
  for (uint32_t r : changed) emit(r);
  for (uint32_t r : changed) {
    for_each_on(r, [&](FlowId id) {
      for (uint32_t q : flows_[id].route.resource_span()) emit(q);
    });
  }
  // Max-min may move rates further away, anywhere in the component.
  for (uint32_t resource : component_resources_) emit(resource);
}

void FairSharePorts::finish(FlowId id) {
  Flow& f = flows_[id];
  TW_ASSERT_HOT_MSG(f.live, "a cancelled flow's end event never runs");
  const Route route = f.route;
  // Its end event was set for the moment its last byte leaves.
  context_.meter.add_route_bytes(route.resource_span(), f.remaining_bytes);
  f.remaining_bytes = 0;
  EventCallback done = std::move(f.on_drained);
  f.finish = {};
  detach(id);
  // A flow that was alone leaves its route idle: no rate to solve again
  // (recompute would find none), unless tracing writes the utilisation.
  if (context_.tracing || !route_idle(route)) recompute(route);
  if (done) done();
}

}  // namespace tensorwire::sim
