// Where a run's time went: how busy each resource was, which one was the
// bottleneck, the lower bound the busiest resource puts on a step (or, for a
// collective, on its operation, beside the plan's own bound), and the
// efficiency: that bound over the time achieved. Also the spread of step times
// a jittered run is read by. Derived from a RunReport alone, for the summary
// and the results JSON alike.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "runner/run_report.h"

namespace tensorwire::report {

struct TimeAccount {
  // What the utilisations are over: the steps' window (point-to-point) or
  // the whole run (collective).
  TimeNs window_ns = 0;
  size_t steps = 0;  // finished steps; 1 operation for a collective
  // The resources that were busy, busiest first (ties in the report's order).
  std::vector<ResourceUsage> busy;
  ResourceUsage bottleneck;  // busy.front()
  double bottleneck_utilisation = 0;
  // The busiest resource's busy time per step.
  TimeNs resource_bound_ns = 0;
  // A collective's plan's bound, when its protocol gives one.
  std::optional<CollectiveTimeBound> plan_bound;
  // The tighter of the two bounds, the time achieved per step (the mean
  // finished step, or the collective's operation), and their ratio.
  TimeNs lower_bound_ns = 0;
  TimeNs achieved_ns = 0;
  double efficiency = 0;

  double utilisation(const ResourceUsage& u) const {
    return window_ns > 0 ? static_cast<double>(u.busy_ns) / static_cast<double>(window_ns) : 0.0;
  }
};

// nullopt when the backend measured no resources, nothing was busy, or no
// step (or operation) finished.
std::optional<TimeAccount> time_account(const RunReport& report);

// Finished steps' durations: median, 99th percentile and maximum, by the
// nearest-rank method (the smallest duration at least p% of the steps do not
// exceed), so every value is a step time that happened.
struct StepTimeSpread {
  TimeNs p50_ns = 0;
  TimeNs p99_ns = 0;
  TimeNs max_ns = 0;
};
std::optional<StepTimeSpread> step_time_spread(const RunReport& report);

// The summary's section: the top `max_rows` resources by utilisation, the
// bottleneck, the bound and the efficiency; with jitter, the step-time
// spread. Empty when there is no account and no jitter.
std::string time_account_section(const RunReport& report, size_t max_rows = 6);

}  // namespace tensorwire::report
