// The dfs strategy's state cache (a digest of every rank's protocol state, of
// the simulated hardware and of the workload's progress) against the same
// reduction without it, on a small real scenario with each kind of fault on
// offer: in exact mode, what the executions did must not shrink. An execution's signature is how many times each protocol state
// machine took each transition (over the ranks) and the problems it found;
// every signature the uncached search reaches, the cached one must reach too.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/dpor_search.h"
#include "model/explorer.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::model {
namespace {

// Two ranks, one tensor, two steps; "a" grows at step 2, so the order of the
// Send and the Recv decides between a meta-data update and a re-request.
const char* kSmall = R"(
name = "small"
[cluster]
nodes = 2
[workload]
kind = "tensors"
steps = 2
[[workload.tensor]]
name = "a"
src = 0
dst = 1
shape = [4]
[[workload.change]]
step = 2
tensor = "a"
shape = [16]
)";

using Signature = std::pair<std::vector<uint64_t>, std::vector<std::string>>;

Signature signature_of(const Execution& e) {
  Signature s;
  for (const TransitionTable& t : e.transitions) {
    for (size_t from = 0; from < t.state_count(); ++from) {
      for (size_t to = 0; to < t.state_count(); ++to) s.first.push_back(t.taken(from, to));
    }
  }
  for (const Problem& p : e.problems) s.second.push_back(problem_line(p));
  return s;
}

struct Explored {
  std::set<Signature> signatures;
  uint64_t executions = 0;
};

constexpr uint64_t kLimit = 100000;

enum class Cache { kNone, kExact, kAbstraction };

Explored explore(const Scenario& scenario, Cache cache, FaultOffer faults, bool qp_error_by_races = false) {
  const Scenario s = model_scenario(scenario);
  DporSearch dpor(s.cluster.nodes);
  if (cache != Cache::kNone) dpor.cache_states(cache == Cache::kExact);
  if (qp_error_by_races) {
    dpor.place_fault_by_races(fault_kind_name(FaultKind::kQpError), qp_error_objects(s.cluster.nodes));
  }
  Explored out;
  NullTraceSink trace;
  do {
    out.signatures.insert(signature_of(run_execution(s, 1, dpor, trace, nullptr, faults)));
    ++out.executions;
  } while (dpor.next_execution() && out.executions < kLimit);
  return out;
}

void expect_exact_loses_nothing(FaultKind kind) {
  const Scenario s = load_scenario_string(kSmall, "small.toml");
  FaultOffer faults;
  faults.kinds = {kind};
  const Explored exact = explore(s, Cache::kExact, faults);
  const Explored full = explore(s, Cache::kNone, faults);
  ASSERT_LT(full.executions, kLimit) << "the uncached search should finish";
  EXPECT_GE(full.signatures.size(), 3u) << "fault points and orders should tell executions apart";
  EXPECT_EQ(exact.signatures, full.signatures);
  EXPECT_LT(exact.executions, full.executions);
}

TEST(StateCache, ExactLosesNoSignatureTheUncachedReductionReachesWithAQpError) {
  expect_exact_loses_nothing(FaultKind::kQpError);
}

TEST(StateCache, ExactLosesNoSignatureTheUncachedReductionReachesWithACrash) {
  expect_exact_loses_nothing(FaultKind::kCrash);
}

TEST(StateCache, ExactLosesNoSignatureTheUncachedReductionReachesWithAFailedRegistration) {
  expect_exact_loses_nothing(FaultKind::kRegistrationFailure);
}

// A QP error placed by its races (as `tensorwire check --strategy dfs
// --faults qp_error` does) reaches every signature that trying it at every
// choice point reaches, with no cache and in exact mode, in fewer executions.
TEST(StateCache, AQpErrorPlacedByItsRacesLosesNoSignature) {
  const Scenario s = load_scenario_string(kSmall, "small.toml");
  FaultOffer faults;
  faults.kinds = {FaultKind::kQpError};
  const Explored everywhere = explore(s, Cache::kNone, faults);
  const Explored by_races = explore(s, Cache::kNone, faults, true);
  const Explored by_races_exact = explore(s, Cache::kExact, faults, true);
  ASSERT_LT(everywhere.executions, kLimit) << "the uncached search should finish";
  EXPECT_GE(everywhere.signatures.size(), 3u);
  EXPECT_EQ(by_races.signatures, everywhere.signatures);
  EXPECT_EQ(by_races_exact.signatures, everywhere.signatures);
  EXPECT_LT(by_races.executions, everywhere.executions);
}

// The default cache is an abstraction: it cuts anywhere, so it runs far
// fewer executions and reaches no outcome exact mode does not. (On this
// scenario it misses one, both steps failing at post_send with the QP error
// struck before the first request: docs/ARCHITECTURE.md.)
TEST(StateCache, TheDefaultAbstractionReachesASubsetInFewerExecutions) {
  const Scenario s = load_scenario_string(kSmall, "small.toml");
  FaultOffer faults;
  faults.kinds = {FaultKind::kQpError};
  const Explored fast = explore(s, Cache::kAbstraction, faults);
  const Explored exact = explore(s, Cache::kExact, faults);
  EXPECT_LT(fast.executions, exact.executions);
  EXPECT_LE(fast.signatures.size(), exact.signatures.size());
  for (const Signature& sig : fast.signatures) EXPECT_EQ(exact.signatures.count(sig), 1u);
}

}  // namespace
}  // namespace tensorwire::model
