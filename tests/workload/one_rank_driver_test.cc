// WorkloadDriver's one-rank mode (what each process of a verbs run uses), on
// the simulator: one driver per rank, each playing only its own rank's Sends
// and Recvs, phases ended by a gate that waits for every rank, as the verbs
// runner's coordinator barrier does. Every tensor arrives and checks byte for
// byte, exactly as with the one driver that plays every rank.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend_sim/simulator.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_rendezvous.h"
#include "core/workload/phase_gate.h"
#include "core/workload/workload_driver.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_protocol.h"

namespace tensorwire {
namespace {

const std::string kRoot = TENSORWIRE_SOURCE_ROOT;

// A barrier in simulated time: agrees (on the next event) once every rank has
// called phase_done for the same phase; fails everyone once a rank is dead.
class SimulatedBarrier {
 public:
  explicit SimulatedBarrier(uint32_t world) : waiting_(world) {}
  class Gate final : public PhaseGate {
   public:
    Gate(SimulatedBarrier& b, RankId r, Clock& clock) : barrier_(b), rank_(r), clock_(clock) {}
    void phase_done(uint64_t, size_t, std::function<void(Status)> agreed) override {
      barrier_.arrive(rank_, clock_, std::move(agreed));
    }

   private:
    SimulatedBarrier& barrier_;
    RankId rank_;
    Clock& clock_;
  };
  Status outcome;  // what the next barrier answers (a test may make it fail)
  uint64_t barriers = 0;

 private:
  void arrive(RankId r, Clock& clock, std::function<void(Status)> agreed) {
    waiting_[r] = [&clock, agreed = std::move(agreed), this]() mutable {
      Status st = outcome;
      clock.schedule_after(0, [agreed = std::move(agreed), st] { agreed(st); });
    };
    for (const auto& w : waiting_) {
      if (!w) return;
    }
    ++barriers;
    std::vector<std::function<void()>> all;
    all.swap(waiting_);
    waiting_.resize(all.size());
    for (auto& w : all) w();
  }
  std::vector<std::function<void()>> waiting_;
};

struct OneRankRun {
  std::vector<WorkloadResult> results;
  std::vector<bool> stopped;
  uint64_t barriers = 0;
};

OneRankRun run_one_driver_per_rank(const Scenario& scenario, Status barrier_outcome = {}) {
  NullTraceSink trace;
  sim::SimOptions o;
  o.seed = scenario.seed;
  sim::Simulator simulator(scenario.cluster, o, trace);
  const uint32_t world = simulator.world_size();
  SimulatedBarrier barrier(world);
  barrier.outcome = barrier_outcome;
  std::vector<std::unique_ptr<tf_verbs::RdmaRendezvous>> rdv;
  std::vector<std::unique_ptr<SimulatedBarrier::Gate>> gates;
  std::vector<std::unique_ptr<WorkloadDriver>> drivers;
  for (RankId r = 0; r < world; ++r) {
    RankEnv env = simulator.env(r);
    rdv.push_back(std::make_unique<tf_verbs::RdmaRendezvous>(
        env, tf_verbs::options_of(scenario.protocol.options)));
    EXPECT_TRUE(rdv.back()->start().is_ok());
    gates.push_back(std::make_unique<SimulatedBarrier::Gate>(barrier, r, env.clock));
  }
  for (RankId r = 0; r < world; ++r) {
    drivers.push_back(std::make_unique<WorkloadDriver>(scenario.workload, scenario.seed, r, world,
                                                       simulator.env(r), rdv[r].get(),
                                                       *gates[r]));
    drivers.back()->start();
  }
  simulator.run();
  OneRankRun out;
  for (auto& d : drivers) {
    d->release_memory();
    out.results.push_back(d->result());
    out.stopped.push_back(d->stopped());
  }
  out.barriers = barrier.barriers;
  return out;
}

class OneRankMode : public ::testing::TestWithParam<std::string> {};

TEST_P(OneRankMode, EachRankChecksItsOwnRecvsAndTogetherTheyMatchTheWholeRunDriver) {
  Scenario scenario = load_scenario_file(kRoot + "/" + GetParam());
  NullTraceSink trace;
  RunReport whole = run_simulation(scenario, {}, trace);
  ASSERT_TRUE(whole.passed());
  OneRankRun parts = run_one_driver_per_rank(scenario);
  size_t phases = 0;
  for (const WorkloadStep& s : scenario.workload.steps) phases += s.phases.size();
  EXPECT_EQ(parts.barriers, phases) << "one barrier per phase";
  for (RankId r = 0; r < parts.results.size(); ++r) {
    const WorkloadResult& w = parts.results[r];
    EXPECT_TRUE(w.finished) << "rank " << r;
    EXPECT_EQ(w.recvs_failed, 0u);
    EXPECT_EQ(w.content_mismatches, 0u);
    EXPECT_EQ(w.recvs_completed_twice, 0u);
    ASSERT_EQ(w.steps.size(), whole.workload.steps.size());
    for (size_t i = 0; i < w.steps.size(); ++i) {
      const auto& mine = w.steps[i].transfers;
      const auto& all = whole.workload.steps[i].transfers;
      ASSERT_EQ(mine.size(), all.size());
      for (size_t j = 0; j < mine.size(); ++j) {
        EXPECT_EQ(mine[j].name, all[j].name);
        if (mine[j].dst != r) {
          EXPECT_FALSE(mine[j].done) << "rank " << r << " played another rank's Recv";
          continue;
        }
        EXPECT_TRUE(mine[j].done && mine[j].status.is_ok()) << mine[j].name;
        EXPECT_EQ(mine[j].verified, all[j].verified) << mine[j].name;
        EXPECT_EQ(mine[j].bytes, all[j].bytes) << mine[j].name;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, OneRankMode,
                         ::testing::Values("scenarios/quickstart.toml",
                                           "scenarios/meta_data_change.toml",
                                           "scenarios/string_tensors.toml",
                                           "tests/backend_verbs/scenarios/dead_tensors_4ranks.toml",
                                           "tests/backend_verbs/scenarios/mesh_4ranks.toml"));

TEST(OneRankMode, AGateThatFailsStopsEveryRankAtThatPhase) {
  Scenario scenario = load_scenario_file(kRoot + "/scenarios/quickstart.toml");
  OneRankRun parts =
      run_one_driver_per_rank(scenario, Status(StatusCode::kPeerGone, "rank 9 is gone"));
  EXPECT_EQ(parts.barriers, 1u);
  for (RankId r = 0; r < parts.results.size(); ++r) {
    EXPECT_TRUE(parts.stopped[r]);
    EXPECT_FALSE(parts.results[r].finished);
    EXPECT_EQ(parts.results[r].steps.size(), 1u) << "no step after the failed barrier";
  }
}

}  // namespace
}  // namespace tensorwire
