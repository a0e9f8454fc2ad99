// The shipped model scenarios (scenarios/model_*.toml), together, reach every
// item every registered protocol declares (core/coverage.h): each is run once
// on the simulator, checked by dfs within a budget, and checked by random walks
// with one injected fault each (QP error, failed registration, crashed rank).
// What only timeouts and aborts reach is listed, exactly, in
// kReachedOnlyByTimeoutsAndAborts: the test fails when an item on that list is
// reached after all (take it off) and when any other item is never reached (a
// scenario is missing, or the path is dead).
//
// The runs matter: "Recv before Send: request parked" is reached by them only.
// No check of these scenarios parks a request (dfs, or random walks with
// faults): under model_scenario every Send of a phase is made at its start,
// before any request can have arrived.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/coverage.h"
#include "core/protocols/protocol_registry.h"
#include "core/trace_sink.h"
#include "model/explorer.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire {
namespace {

namespace fs = std::filesystem;

// "<protocol> / <group>: <item>". Reached only once the model checker injects
// request timeouts and step aborts (check --faults timeout,abort, and the
// workload's abort step); until then no shipped scenario can reach them. Keep
// it exact: an item reached otherwise fails the test.
const std::set<std::string> kReachedOnlyByTimeoutsAndAborts = {
    // A request re-requested (after META_DATA_UPDATE) fails only by Abort:
    // its timeout or its step's abort. (From Requested, a registration that
    // fails for the new meta-data withdraws it too: reg_fail reaches that.)
    "tf_verbs_zero_copy / transitions: RdmaTensorRequest ReRequested->Withdrawn",
    "tf_verbs_zero_copy / paths: request timed out",
    "tf_verbs_zero_copy / paths: step aborted",
    "tf_verbs_zero_copy / paths: request for an aborted step answered",
    // The workload driver calls fail_send only when its Send was refused,
    // which happens only for a step already aborted.
    "tf_verbs_zero_copy / paths: Send failed: the Recv is told",
    // CommNet's abort_step is called only by timeouts and aborts.
    "oneflow_commnet / paths: step aborted",
};

constexpr uint64_t kDfsSchedules = 2000;
constexpr uint64_t kFaultSchedules = 300;

std::vector<fs::path> model_scenarios() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(TENSORWIRE_SOURCE_ROOT) / "scenarios")) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("model_") && name.ends_with(".toml")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What one scenario reaches: one run, a dfs check, random walks with faults.
Coverage scenario_coverage(const Scenario& scenario) {
  NullTraceSink trace;
  Coverage reached = run_simulation(scenario, SimulationOptions{}, trace).coverage;
  model::CheckOptions dfs;
  dfs.strategy = model::CheckStrategy::kDfs;
  dfs.max_schedules = kDfsSchedules;
  const model::CheckReport searched = model::check(scenario, dfs);
  EXPECT_EQ(searched.outcome, model::CheckOutcome::kNothingFound) << scenario.name;
  reached.add(searched.coverage);
  model::CheckOptions faulty;
  faulty.strategy = model::CheckStrategy::kRandom;
  faulty.max_schedules = kFaultSchedules;
  faulty.faults = {model::FaultKind::kQpError, model::FaultKind::kRegistrationFailure,
                   model::FaultKind::kCrash};
  const model::CheckReport faulted = model::check(scenario, faulty);
  // Only safety: with more than two ranks a fault between ranks 0 and 1 can
  // leave a third waiting for ever (the broadcast does not pass a rank's
  // failure on), a liveness verdict this test is not about.
  EXPECT_NE(faulted.outcome, model::CheckOutcome::kSafety) << scenario.name;
  reached.add(faulted.coverage);
  return reached;
}

TEST(ShippedModelScenarios, TogetherReachEveryDeclaredItemButTimeoutsAndAborts) {
  std::map<std::string, Coverage> by_protocol;
  for (const ProtocolDescriptor* p : registered_protocols()) {
    by_protocol[std::string(p->name())] = p->coverage(p->default_options());
  }
  const std::vector<fs::path> scenarios = model_scenarios();
  ASSERT_GE(scenarios.size(), 3u);
  for (const fs::path& path : scenarios) {
    const Scenario scenario = load_scenario_file(path.string());
    by_protocol.at(scenario.protocol.name).add(scenario_coverage(scenario));
  }
  std::set<std::string> declared;
  for (const auto& [protocol, coverage] : by_protocol) {
    for (const CoverageGroup& g : coverage.groups()) {
      for (const CoverageItem& i : g.items) {
        const std::string key = protocol + " / " + g.name + ": " + i.name;
        declared.insert(key);
        if (kReachedOnlyByTimeoutsAndAborts.count(key) != 0) {
          EXPECT_EQ(i.count, 0u) << key << " is reached: take it off kReachedOnlyByTimeoutsAndAborts";
        } else {
          EXPECT_GT(i.count, 0u) << key << ": no shipped model scenario reaches it";
        }
      }
    }
  }
  for (const std::string& key : kReachedOnlyByTimeoutsAndAborts) {
    EXPECT_EQ(declared.count(key), 1u) << key << " is declared by no protocol";
  }
}

}  // namespace
}  // namespace tensorwire
