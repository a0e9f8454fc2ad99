// The bug zoo against the shipped model scenarios: every planted bug of
// every registered protocol is found by `check` on one of scenarios/model_*,
// with the strategy, faults and budget its row names; the counterexample
// shrinks and the shrunk schedule replays to the same check; and the same
// search without the bug finds nothing. A bug added to a protocol's zoo
// without a row here fails the first test. The rows are what
// docs/CHECKING.md lists for a user who wants to watch the checker work.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "core/protocols/protocol_registry.h"
#include "model/counterexample_shrinker.h"
#include "model/explorer.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::model {
namespace {

struct ZooRow {
  const char* bug;
  const char* scenario;  // scenarios/<this>.toml
  CheckStrategy strategy;
  std::vector<FaultKind> faults;
  uint64_t max_schedules;
};

void PrintTo(const ZooRow& row, std::ostream* os) { *os << row.bug << " on " << row.scenario; }

const std::vector<ZooRow>& rows() {
  static const std::vector<ZooRow> kRows = {
      {"stale_re_request_address", "model_2x2", CheckStrategy::kRandom, {}, 100},
      {"skip_clone", "model_2x2", CheckStrategy::kRandom, {}, 100},
      {"reuse_request_index", "model_2x2", CheckStrategy::kDfs, {}, 200},
      {"free_proxy_before_copy", "model_2x3", CheckStrategy::kDfs, {}, 200},
      {"no_realloc_on_size_change", "model_2x2", CheckStrategy::kDfs, {}, 200},
      {"destroy_response_early", "model_2x2", CheckStrategy::kPct, {}, 100},
      {"unregistered_source", "model_2x2", CheckStrategy::kDfs, {}, 200},
      {"send_done_before_write", "model_2x2", CheckStrategy::kDfs, {}, 200},
      {"deregister_source_early", "model_2x2", CheckStrategy::kDfs, {}, 200},
      {"pool_overlap", "model_2x3", CheckStrategy::kDfs, {}, 200},
      {"free_on_withdraw", "model_timeouts", CheckStrategy::kDfs, {FaultKind::kTimeout}, 200},
      {"write_before_staging_copy", "model_gpu_staging", CheckStrategy::kDfs, {}, 200},
      {"ignore_proto_size", "model_strings", CheckStrategy::kDfs, {}, 200},
      {"max_consumer_read", "model_broadcast", CheckStrategy::kDfs, {}, 200},
      {"free_at_first_consumer", "model_broadcast", CheckStrategy::kRandom, {}, 100},
      {"read_reported_at_issue", "model_broadcast", CheckStrategy::kPct, {}, 100},
      {"chunk_across_windows", "model_broadcast_windows", CheckStrategy::kDfs, {}, 200},
      {"release_at_read_post", "model_oneflow", CheckStrategy::kDfs, {}, 200},
      {"no_repost_on_read_done", "model_oneflow", CheckStrategy::kDfs, {}, 200},
      {"vbuf_reuse_at_write_post", "model_mvapich2_gpu", CheckStrategy::kDfs, {}, 200},
      {"fin_before_write_completion", "model_mvapich2_gpu", CheckStrategy::kDfs, {}, 200},
      {"idle_before_ack", "model_tf_verbs_legacy", CheckStrategy::kDfs, {}, 200},
      {"realloc_while_write_pending", "model_tf_verbs_legacy", CheckStrategy::kRandom,
       {FaultKind::kStepAbort}, 100},
  };
  return kRows;
}

Scenario shipped(const char* name) {
  return load_scenario_file(std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/" + name + ".toml");
}

CheckOptions options_of(const ZooRow& row) {
  CheckOptions o;
  o.strategy = row.strategy;
  o.max_schedules = row.max_schedules;
  o.faults = row.faults;
  return o;
}

TEST(ZooOnShippedScenarios, EveryPlantedBugOfEveryProtocolHasARow) {
  size_t bugs = 0;
  for (const ProtocolDescriptor* p : registered_protocols()) {
    for (std::string_view bug : p->planted_bugs()) {
      ++bugs;
      const bool listed = std::any_of(rows().begin(), rows().end(),
                                      [bug](const ZooRow& r) { return bug == r.bug; });
      EXPECT_TRUE(listed) << p->name() << ": " << bug << " has no row";
    }
  }
  EXPECT_EQ(rows().size(), bugs) << "a row for a bug no protocol plants";
}

class ZooOnShippedScenarios : public ::testing::TestWithParam<ZooRow> {};

TEST_P(ZooOnShippedScenarios, FoundShrunkAndReplayed) {
  const ZooRow& row = GetParam();
  Scenario s = shipped(row.scenario);
  ASSERT_TRUE(s.protocol.descriptor().plant_bug(s.protocol.options, row.bug))
      << row.bug << " is not a bug of " << row.scenario << "'s protocol";
  const CheckOptions o = options_of(row);
  const CheckReport r = check(s, o);
  ASSERT_NE(r.outcome, CheckOutcome::kNothingFound) << row.bug << " on " << row.scenario;
  ASSERT_NE(r.outcome, CheckOutcome::kBadInput);
  ASSERT_TRUE(r.counterexample.has_value());
  const Scenario checked = model_scenario(s);
  const FaultOffer offer{r.counterexample_faults, o.max_faults, {}};
  const ShrinkResult shrunk = shrink_counterexample(checked, o.seed, offer, *r.counterexample);
  EXPECT_TRUE(shrunk.reproduced);
  EXPECT_LE(shrunk.size, shrunk.original_size);
  ReplayStrategy replay(shrunk.execution.choices);
  NullTraceSink trace;
  const Execution again = run_execution(checked, o.seed, replay, trace, nullptr, offer);
  EXPECT_FALSE(again.diverged);
  EXPECT_EQ(again.outcome, r.outcome);
  EXPECT_EQ(violated_check(again), violated_check(*r.counterexample));
}

TEST_P(ZooOnShippedScenarios, TheSameSearchFindsNothingWithoutTheBug) {
  const ZooRow& row = GetParam();
  const CheckReport r = check(shipped(row.scenario), options_of(row));
  EXPECT_EQ(r.outcome, CheckOutcome::kNothingFound)
      << row.scenario << ": "
      << (r.counterexample && !r.counterexample->problems.empty() ? r.counterexample->problems[0].text : "");
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooOnShippedScenarios, ::testing::ValuesIn(rows()),
                         [](const ::testing::TestParamInfo<ZooRow>& info) { return std::string(info.param.bug); });

}  // namespace
}  // namespace tensorwire::model
