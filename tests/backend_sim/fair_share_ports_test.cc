// The ports solving once per instant: a burst of flows that start or end at
// one simulated time is solved once, and every flow drains when solving
// after every change (what a run under a model checker does) says it does.
//
// Numbers: NICs at 1 GB/s, so 1 MB alone takes 1 ms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "backend_sim/fair_share_ports.h"
#include "backend_sim/sim_context.h"
#include "core/trace_sink.h"

namespace tensorwire::sim::testing {
namespace {

constexpr uint64_t kMB = 1000000;
constexpr TimeNs kNotDrained = -1;

Cluster star(uint32_t nodes) {
  Cluster c;
  c.nodes = nodes;
  c.nic_bandwidth_bytes_per_s = 1e9;
  return c;
}

Cluster leaf_spine(uint32_t nodes) {
  Cluster c = star(nodes);
  c.topology.kind = TopologyKind::kLeafSpine;
  c.topology.leaf_nodes = 2;
  c.topology.spines = 2;
  c.topology.oversubscription = 2;
  return c;
}

// The ports over one event queue; `per_change` installs the scheduler a
// model checker would (insertion order here), which makes the ports solve at
// every change instead of at the instant's end.
struct Ports {
  NullTraceSink trace;
  SimContext context;
  FairSharePorts ports;
  Ports(const Cluster& cluster, bool per_change)
      : context(cluster, SimOptions{}, trace, false), ports(context, context.fabric) {
    if (per_change) context.events.set_scheduler(std::make_unique<FifoScheduler>());
  }
};

TEST(FairSharePorts, AnIncastStartedInOneInstantIsSolvedOnceAndSplitsTheReceiver) {
  for (bool per_change : {false, true}) {
    Ports p(star(9), per_change);
    std::vector<TimeNs> drained(8, kNotDrained);
    for (uint32_t i = 0; i < 8; ++i) {
      p.context.events.schedule_at(1000, i, "start", [&p, &drained, i] {
        p.ports.start(i, 8, kMB, [&p, &drained, i] { drained[i] = p.context.now(); });
      });
    }
    while (p.context.events.run_next()) {
    }
    // Eight flows share node 8's receive side: 125 MB/s each, 8 ms for 1 MB.
    for (TimeNs t : drained) EXPECT_EQ(t, 1000 + 8'000'000) << "per change: " << per_change;
    if (per_change) {
      EXPECT_GE(p.ports.solves(), 7u) << "every start after the first re-solves";
    } else {
      // The starts, then the ends (all at one instant), each solved once.
      EXPECT_EQ(p.ports.solves(), 2u);
    }
  }
}

// A flow alone on its route runs at the route's narrowest resource, solves
// nothing, and leaves the route idle when it ends: here across two leaves of
// a 2:1 oversubscribed leaf-spine, where a spine link is narrower than either
// NIC, then again on the same route once the first has drained.
TEST(FairSharePorts, ALoneFlowRunsAtItsNarrowestResourceAndLeavesItsRouteIdle) {
  for (bool per_change : {false, true}) {
    Ports p(leaf_spine(4), per_change);
    const Route route = p.context.fabric.route(0, 3);
    ASSERT_GT(route.hops, 2u) << "the route crosses the spine";
    double narrowest = p.context.fabric.capacity(route.resources[0]);
    for (uint32_t r : route.resource_span()) narrowest = std::min(narrowest, p.context.fabric.capacity(r));
    ASSERT_LT(narrowest, 1e9) << "a spine link is narrower than a NIC";
    std::vector<TimeNs> drained;
    p.context.events.schedule_at(1000, 0, "start", [&] {
      p.ports.start(0, 3, kMB, [&] {
        drained.push_back(p.context.now());
        for (uint32_t r : route.resource_span()) EXPECT_EQ(p.ports.flows_on_resource(r), 0u);
        p.ports.start(0, 3, kMB, [&] { drained.push_back(p.context.now()); });
      });
    });
    while (p.context.events.run_next()) {
    }
    const TimeNs one = transfer_time_ns(static_cast<double>(kMB), narrowest);
    EXPECT_EQ(drained, (std::vector<TimeNs>{1000 + one, 1000 + 2 * one})) << "per change: " << per_change;
    EXPECT_EQ(p.ports.solves(), 0u) << "a lone flow's rate needs no solve";
    for (uint32_t r : route.resource_span()) EXPECT_EQ(p.ports.flows_on_resource(r), 0u);
  }
}

// Flows that end out of start order leave the others in start order: ten
// flows share node 10's receive side, six are cancelled one by one in a
// shuffled order (the resource's list compacts on the way), and the four left,
// moving at equal rates, drain at one instant in the order they started (their
// end events are rescheduled in the list's order, which breaks the tie).
TEST(FairSharePorts, FlowsEndingOutOfStartOrderLeaveTheRestInStartOrder) {
  for (bool per_change : {false, true}) {
    Ports p(star(11), per_change);
    const uint32_t rx = p.context.fabric.rx(10, 0);
    std::vector<FlowId> id(10, 0);
    std::vector<uint32_t> drained_order;
    for (uint32_t i = 0; i < 10; ++i) {
      p.context.events.schedule_at(1000, i, "start", [&, i] {
        id[i] = p.ports.start(i, 10, kMB, [&, i] { drained_order.push_back(i); });
      });
    }
    const std::vector<uint32_t> cancelled = {5, 1, 8, 2, 6, 9};
    for (size_t k = 0; k < cancelled.size(); ++k) {
      p.context.events.schedule_at(100'000 * static_cast<TimeNs>(k + 1), 0, "cancel", [&, k] {
        p.ports.cancel(id[cancelled[k]]);
        EXPECT_EQ(p.ports.flows_on_resource(rx), 10 - (k + 1)) << "per change: " << per_change;
      });
    }
    while (p.context.events.run_next()) {
    }
    EXPECT_EQ(drained_order, (std::vector<uint32_t>{0, 3, 4, 7})) << "per change: " << per_change;
    EXPECT_EQ(p.ports.flows_on_resource(rx), 0u);
  }
}

// One random plan of flows: some start at shared instants, some when an
// earlier flow drains, some are cancelled mid-way.
struct PlannedFlow {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint64_t bytes = 0;
  TimeNs start_ns = 0;
  int after = -1;            // >= 0: starts when that flow drains
  TimeNs cancel_ns = -1;     // >= 0: cancelled then, if still moving
};

std::vector<PlannedFlow> draw_plan(std::mt19937_64& rng, uint32_t nodes) {
  std::vector<PlannedFlow> plan(3 + rng() % 22);
  for (size_t i = 0; i < plan.size(); ++i) {
    PlannedFlow& f = plan[i];
    f.src = static_cast<uint32_t>(rng() % nodes);
    f.dst = static_cast<uint32_t>((f.src + 1 + rng() % (nodes - 1)) % nodes);
    f.bytes = 1 + rng() % (4 * kMB);
    f.start_ns = static_cast<TimeNs>(rng() % 4) * 500'000;  // few instants: bursts
    if (i > 0 && rng() % 3 == 0) f.after = static_cast<int>(rng() % i);
    if (rng() % 6 == 0) f.cancel_ns = static_cast<TimeNs>(rng() % 6'000'000);
  }
  return plan;
}

// When each flow drained (kNotDrained: cancelled first).
std::vector<TimeNs> run_plan(const Cluster& cluster, const std::vector<PlannedFlow>& plan,
                             bool per_change) {
  Ports p(cluster, per_change);
  std::vector<TimeNs> drained(plan.size(), kNotDrained);
  std::vector<FlowId> id(plan.size(), 0);
  std::vector<bool> moving(plan.size(), false);
  std::function<void(size_t)> start = [&](size_t i) {
    moving[i] = true;
    id[i] = p.ports.start(plan[i].src, plan[i].dst, plan[i].bytes, [&, i] {
      moving[i] = false;
      drained[i] = p.context.now();
      for (size_t j = 0; j < plan.size(); ++j) {
        if (plan[j].after == static_cast<int>(i)) start(j);
      }
    });
  };
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].after < 0) p.context.events.schedule_at(plan[i].start_ns, 0, "start", [&, i] { start(i); });
    if (plan[i].cancel_ns < 0) continue;
    p.context.events.schedule_at(plan[i].cancel_ns, 0, "cancel", [&, i] {
      if (!moving[i]) return;  // a flow id is reused once its flow ended
      moving[i] = false;
      p.ports.cancel(id[i]);
    });
  }
  while (p.context.events.run_next()) {
  }
  return drained;
}

TEST(FairSharePorts, SolvingAtTheInstantsEndDrainsEveryFlowWhenSolvingAtEveryChangeDoes) {
  std::mt19937_64 rng(27);
  for (int round = 0; round < 300; ++round) {
    const uint32_t nodes = 2 + static_cast<uint32_t>(rng() % 5);
    const Cluster cluster = nodes % 2 == 0 && rng() % 2 == 0 ? leaf_spine(nodes) : star(nodes);
    const std::vector<PlannedFlow> plan = draw_plan(rng, nodes);
    const std::vector<TimeNs> batched = run_plan(cluster, plan, /*per_change=*/false);
    const std::vector<TimeNs> per_change = run_plan(cluster, plan, /*per_change=*/true);
    for (size_t i = 0; i < plan.size(); ++i) {
      // Both solve the same flows at each instant; only the order of the
      // floating-point sums and the nanosecond rounding of end events differ.
      ASSERT_EQ(batched[i] == kNotDrained, per_change[i] == kNotDrained) << "round " << round << " flow " << i;
      EXPECT_LE(std::llabs(batched[i] - per_change[i]), 64) << "round " << round << " flow " << i;
    }
  }
}

}  // namespace
}  // namespace tensorwire::sim::testing
