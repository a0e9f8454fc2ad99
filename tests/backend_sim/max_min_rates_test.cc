// Max-min fair rates: hand-computed cases, a property test of the max-min
// conditions on random flow sets against a plain reference solver, and the
// simulated ports sharing max-min fairly (a flow limited at its far end
// leaves its share to the others; a flow leaving mid-transfer gives its
// share back).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend_sim/max_min_rates.h"
#include "tests/backend_sim/sim_fixture.h"

namespace tensorwire::sim::testing {
namespace {

using Flows = std::vector<std::vector<uint32_t>>;

std::vector<double> solve(const std::vector<double>& capacity, const Flows& flows) {
  MaxMinRates m;
  for (double c : capacity) m.add_resource(c);
  for (const std::vector<uint32_t>& f : flows) m.add_flow(f);
  return m.solve();
}

// The textbook algorithm, written for clarity: raise every unfrozen flow by
// the same amount until some resource is full, freeze its flows, repeat.
std::vector<double> reference(const std::vector<double>& capacity, const Flows& flows) {
  std::vector<double> rate(flows.size(), 0.0);
  std::vector<bool> frozen(flows.size(), false);
  for (;;) {
    double step = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < capacity.size(); ++r) {
      double used = 0;
      int rising = 0;
      for (size_t f = 0; f < flows.size(); ++f) {
        if (std::count(flows[f].begin(), flows[f].end(), r) == 0) continue;
        used += rate[f];
        if (!frozen[f]) ++rising;
      }
      if (rising > 0) step = std::min(step, (capacity[r] - used) / rising);
    }
    if (step == std::numeric_limits<double>::infinity()) return rate;
    for (size_t f = 0; f < flows.size(); ++f) {
      if (!frozen[f]) rate[f] += step;
    }
    for (size_t r = 0; r < capacity.size(); ++r) {
      double used = 0;
      for (size_t f = 0; f < flows.size(); ++f) {
        if (std::count(flows[f].begin(), flows[f].end(), r) != 0) used += rate[f];
      }
      if (used < capacity[r] * (1 - 1e-9)) continue;
      for (size_t f = 0; f < flows.size(); ++f) {
        if (std::count(flows[f].begin(), flows[f].end(), r) != 0) frozen[f] = true;
      }
    }
  }
}

TEST(MaxMinRates, IncastSplitsTheReceiverEqually) {
  // Three senders (tx 0-2) into one receiver (resource 3).
  const std::vector<double> r = solve({10, 10, 10, 9}, {{0, 3}, {1, 3}, {2, 3}});
  EXPECT_DOUBLE_EQ(r[0], 3);
  EXPECT_DOUBLE_EQ(r[1], 3);
  EXPECT_DOUBLE_EQ(r[2], 3);
}

TEST(MaxMinRates, AFlowLimitedElsewhereLeavesItsShareToTheOthers) {
  // Resource 0 (capacity 12) carries three flows; flow 0 also crosses
  // resource 1 (capacity 2). min(c/n) would give 2, 4, 4 and leave 2 unused;
  // max-min gives flows 1 and 2 the rest: (12 - 2) / 2 = 5 each.
  const std::vector<double> r = solve({12, 2, 100, 100}, {{0, 1}, {0, 2}, {0, 3}});
  EXPECT_DOUBLE_EQ(r[0], 2);
  EXPECT_DOUBLE_EQ(r[1], 5);
  EXPECT_DOUBLE_EQ(r[2], 5);
}

TEST(MaxMinRates, ALoneFlowGetsItsNarrowestResource) {
  const std::vector<double> r = solve({7, 3}, {{0, 1}});
  EXPECT_DOUBLE_EQ(r[0], 3);
}

// The max-min conditions: no resource over capacity, and every flow crosses
// a saturated resource where no flow is faster.
void expect_max_min(const std::vector<double>& capacity, const Flows& flows,
                    const std::vector<double>& rate) {
  std::vector<double> load(capacity.size(), 0.0);
  for (size_t f = 0; f < flows.size(); ++f) {
    for (uint32_t r : flows[f]) load[r] += rate[f];
  }
  for (size_t r = 0; r < capacity.size(); ++r) EXPECT_LE(load[r], capacity[r] * (1 + 1e-9)) << r;
  for (size_t f = 0; f < flows.size(); ++f) {
    bool bottlenecked = false;
    for (uint32_t r : flows[f]) {
      if (load[r] < capacity[r] * (1 - 1e-9)) continue;
      bool fastest = true;
      for (size_t g = 0; g < flows.size(); ++g) {
        const bool on_r = std::count(flows[g].begin(), flows[g].end(), r) != 0;
        if (on_r && rate[g] > rate[f] * (1 + 1e-9)) fastest = false;
      }
      bottlenecked = bottlenecked || fastest;
    }
    EXPECT_TRUE(bottlenecked) << "flow " << f << " at " << rate[f] << " has no bottleneck";
  }
}

TEST(MaxMinRates, RandomFlowSetsMeetTheMaxMinConditionsAndMatchTheReference) {
  std::mt19937_64 rng(27);
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t resources = 2 + rng() % 10;
    std::vector<double> capacity;
    for (uint32_t r = 0; r < resources; ++r) capacity.push_back(1.0 + static_cast<double>(rng() % 100));
    Flows flows(1 + rng() % 20);
    for (std::vector<uint32_t>& f : flows) {
      const uint32_t hops = 1 + rng() % 3;
      for (uint32_t h = 0; h < hops; ++h) {
        const uint32_t r = static_cast<uint32_t>(rng() % resources);
        if (std::count(f.begin(), f.end(), r) == 0) f.push_back(r);
      }
    }
    const std::vector<double> rate = solve(capacity, flows);
    expect_max_min(capacity, flows, rate);
    const std::vector<double> want = reference(capacity, flows);
    for (size_t f = 0; f < flows.size(); ++f) {
      EXPECT_NEAR(rate[f], want[f], 1e-9 * want[f]) << "trial " << trial << " flow " << f;
    }
    if (HasFailure()) return;
  }
}

// The simulated ports. Flows A (0 -> 1, 3 MiB) and B (0 -> 2, 1 MiB) share
// node 0's tx; B, C (3 -> 2) and D (1 -> 2), 1 MiB each, share node 2's rx.
// Max-min: B, C, D at c/3 (node 2's rx is full), A at the 2c/3 node 0's tx
// has left. At 3 MiB / c they end together, A has 1 MiB left, and alone it
// moves at c: it ends 1 MiB / c after them. (min(c/n_tx, c/n_rx) would run A
// at c/2 and end it 1.5 MiB / c after them.)
constexpr uint32_t kMiB = 1u << 20;
constexpr double kBandwidth = 1e9;

Cluster ports_cluster() {
  Cluster c;
  c.nodes = 4;
  c.gpus_per_node = 0;
  c.nic_bandwidth_bytes_per_s = kBandwidth;
  c.nic_latency_ns = 1000;
  // Free registrations: every rank's CPU is idle at 0, so all four flows
  // start together.
  c.registration_base_ns = 0;
  c.registration_per_page_ns = 0;
  return c;
}

TimeNs done_ns(SimFixture& f, RankId rank, uint64_t wr_id) {
  for (const Recorded& r : f.completions(rank)) {
    if (r.completion.wr_id == wr_id) return r.at_ns;
  }
  ADD_FAILURE() << "no completion of work request " << wr_id << " on rank " << rank;
  return 0;
}

TEST(MaxMinPorts, AFlowLimitedAtItsReceiverLeavesItsSenderShareToAnotherFlow) {
  SimFixture f(ports_cluster(), /*payload=*/false);
  const Access rw = Access::kLocalWrite | Access::kRemoteWrite;
  MemoryRegion src0 = f.region(0, 3 * kMiB, Access::kNone);
  MemoryRegion src1 = f.region(1, kMiB, Access::kNone);
  MemoryRegion src3 = f.region(3, kMiB, Access::kNone);
  MemoryRegion to1 = f.region(1, 3 * kMiB, rw);
  MemoryRegion to2 = f.region(2, 3 * kMiB, rw);
  ASSERT_TRUE(f.write(0, 1, src0, to1, 3 * kMiB, /*wr_id=*/1).is_ok());  // A
  ASSERT_TRUE(f.write(0, 2, src0, to2, kMiB, /*wr_id=*/2).is_ok());      // B
  ASSERT_TRUE(f.write(3, 2, src3, to2, kMiB, /*wr_id=*/3).is_ok());      // C
  ASSERT_TRUE(f.write(1, 2, src1, to2, kMiB, /*wr_id=*/4).is_ok());      // D
  f.sim().run();
  const TimeNs a = done_ns(f, 0, 1), b = done_ns(f, 0, 2), c = done_ns(f, 3, 3),
               d = done_ns(f, 1, 4);
  // B, C and D share node 2's rx equally: they end within rounding.
  EXPECT_NEAR(static_cast<double>(b), static_cast<double>(c), 2);
  EXPECT_NEAR(static_cast<double>(b), static_cast<double>(d), 2);
  // Each moved 1 MiB at a third of the bandwidth (both acknowledgements'
  // latencies and the wire latency are in both completions alike).
  const double third_ns = 3.0 * kMiB * 1e9 / kBandwidth;
  EXPECT_NEAR(static_cast<double>(c) - 2 * 1000, third_ns, 3);
  // A's last MiB, alone after they left mid-transfer of A, at the full bandwidth.
  EXPECT_NEAR(static_cast<double>(a - b), 1.0 * kMiB * 1e9 / kBandwidth, 3);
}

}  // namespace
}  // namespace tensorwire::sim::testing
