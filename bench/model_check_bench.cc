// The model checker's throughput (issue 26, part 5): schedules/s and
// states/s of `check` on scenarios/model_2x3.toml, as random walks and as dfs
// with a QP error, in CPU time of the benchmark's thread (the wall clock of a
// shared machine says more about the neighbours). Each iteration is one whole
// search of a fixed number of schedules, so the counters are rates of the
// search as `tensorwire check` runs it.
#include <benchmark/benchmark.h>

#include <string>

#include "model/explorer.h"
#include "scenario/scenario_loader.h"

namespace tensorwire {
namespace {

Scenario model_2x3() {
  return load_scenario_file(std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/model_2x3.toml");
}

void report_rates(benchmark::State& state, uint64_t schedules, uint64_t states) {
  state.counters["schedules_per_s"] =
      benchmark::Counter(static_cast<double>(schedules), benchmark::Counter::kIsRate);
  state.counters["states_per_s"] =
      benchmark::Counter(static_cast<double>(states), benchmark::Counter::kIsRate);
}

// Runs `options` on model_2x3 once per iteration and reports the rates.
void check_model_2x3(benchmark::State& state, const model::CheckOptions& options) {
  const Scenario scenario = model_2x3();
  uint64_t schedules = 0, states = 0;
  for (auto _ : state) {
    const model::CheckReport r = model::check(scenario, options);
    if (r.outcome != model::CheckOutcome::kNothingFound) state.SkipWithError("a violation on model_2x3");
    schedules += r.schedules;
    states += r.distinct_states;
  }
  report_rates(state, schedules, states);
}

void BM_CheckRandomModel2x3(benchmark::State& state) {
  model::CheckOptions options;
  options.strategy = model::CheckStrategy::kRandom;
  options.max_schedules = static_cast<uint64_t>(state.range(0));
  check_model_2x3(state, options);
}
BENCHMARK(BM_CheckRandomModel2x3)->ArgName("schedules")->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_CheckDfsQpErrorModel2x3(benchmark::State& state) {
  model::CheckOptions options;
  options.strategy = model::CheckStrategy::kDfs;
  options.faults = {model::FaultKind::kQpError};
  options.max_schedules = static_cast<uint64_t>(state.range(0));
  check_model_2x3(state, options);
}
BENCHMARK(BM_CheckDfsQpErrorModel2x3)->ArgName("schedules")->Arg(5000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tensorwire
