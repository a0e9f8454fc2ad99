#include "report/time_account.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "core/assert.h"
#include "core/units_format.h"

namespace tensorwire::report {
namespace {

// Steps that finished: step_wire_bytes holds one entry per finished step.
size_t finished_steps(const RunReport& report) {
  return std::min(report.workload.steps.size(), report.step_wire_bytes.size());
}

std::string percent(double fraction) {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.1f%%", fraction * 100.0);
  return text.data();
}

std::string pad_right(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

// The window, step count and achieved time of a point-to-point run; false
// when no step finished.
bool point_to_point_window(const RunReport& report, TimeAccount& account) {
  const size_t finished = finished_steps(report);
  if (finished == 0) return false;
  const std::vector<StepResult>& steps = report.workload.steps;
  TimeNs total_ns = 0;
  for (size_t i = 0; i < finished; ++i) total_ns += steps[i].end_ns - steps[i].start_ns;
  account.window_ns = steps[finished - 1].end_ns - steps[0].start_ns;
  account.steps = finished;
  account.achieved_ns = total_ns / static_cast<TimeNs>(finished);
  return true;
}

// A collective's one operation: the plan's bound where it gives one.
bool collective_window(const RunReport& report, TimeAccount& account) {
  if (report.collective) account.plan_bound = report.collective->time_bound();
  account.window_ns = report.end_ns;
  account.steps = 1;
  account.achieved_ns = account.plan_bound ? account.plan_bound->achieved_ns : report.end_ns;
  return report.end_ns > 0;
}

}  // namespace

std::optional<TimeAccount> time_account(const RunReport& report) {
  TimeAccount account;
  const bool collective = report.collective_run();
  const std::vector<ResourceUsage>& usage = collective ? report.resources : report.step_resources;
  if (!(collective ? collective_window(report, account) : point_to_point_window(report, account))) {
    return std::nullopt;
  }
  for (const ResourceUsage& u : usage) {
    if (u.busy_ns > 0) account.busy.push_back(u);
  }
  if (account.busy.empty() || account.window_ns <= 0 || account.achieved_ns <= 0) return std::nullopt;
  std::stable_sort(account.busy.begin(), account.busy.end(),
                   [](const ResourceUsage& a, const ResourceUsage& b) { return a.busy_ns > b.busy_ns; });
  account.bottleneck = account.busy.front();
  account.bottleneck_utilisation = account.utilisation(account.bottleneck);
  account.resource_bound_ns = account.bottleneck.busy_ns / static_cast<TimeNs>(account.steps);
  account.lower_bound_ns = account.resource_bound_ns;
  if (account.plan_bound) {
    account.lower_bound_ns = std::max(account.lower_bound_ns, account.plan_bound->bound_ns);
  }
  account.efficiency =
      static_cast<double>(account.lower_bound_ns) / static_cast<double>(account.achieved_ns);
  return account;
}

std::optional<StepTimeSpread> step_time_spread(const RunReport& report) {
  const size_t finished = finished_steps(report);
  if (finished == 0) return std::nullopt;
  std::vector<TimeNs> durations;
  for (size_t i = 0; i < finished; ++i) {
    durations.push_back(report.workload.steps[i].end_ns - report.workload.steps[i].start_ns);
  }
  std::sort(durations.begin(), durations.end());
  // Nearest rank: the ceil(p * n / 100)-th smallest, counting from 1.
  auto rank = [&](size_t p) { return durations[(p * finished + 99) / 100 - 1]; };
  return StepTimeSpread{rank(50), rank(99), durations.back()};
}

namespace {

std::string account_lines(const TimeAccount& a, size_t max_rows) {
  std::string out;
  out += "  " + pad_right("resource", 22) + pad_left("busy", 12) + pad_left("utilisation", 14) + "\n";
  const size_t rows = std::min(max_rows, a.busy.size());
  for (size_t i = 0; i < rows; ++i) {
    const ResourceUsage& u = a.busy[i];
    out += "  " + pad_right(u.name, 22) + pad_left(format_duration_ns(u.busy_ns), 12) +
           pad_left(percent(a.utilisation(u)), 14) + "\n";
  }
  if (rows < a.busy.size()) out += "  ... " + std::to_string(a.busy.size() - rows) + " more busy\n";
  const std::string per = a.steps == 1 ? "" : " / " + std::to_string(a.steps) + " steps";
  out += "  bottleneck              " + a.bottleneck.name + " (" +
         resource_kind_name(a.bottleneck.kind) + "), " + percent(a.bottleneck_utilisation) +
         " busy\n";
  out += "  resource bound          " + format_duration_ns(a.resource_bound_ns) +
         " (its busy time " + format_duration_ns(a.bottleneck.busy_ns) + per + ")\n";
  if (a.plan_bound) {
    out += "  plan bound              " + format_duration_ns(a.plan_bound->bound_ns) + " (" +
           a.plan_bound->what + ")\n";
  }
  out += "  efficiency              " + percent(a.efficiency) + " (lower bound " +
         format_duration_ns(a.lower_bound_ns) + " / " +
         (a.steps == 1 ? "achieved " : "mean step ") +
         format_duration_ns(a.achieved_ns) + ")\n";
  return out;
}

}  // namespace

std::string time_account_section(const RunReport& report, size_t max_rows) {
  const std::optional<TimeAccount> account = time_account(report);
  const std::optional<StepTimeSpread> spread =
      report.jitter.empty() ? std::nullopt : step_time_spread(report);
  if (!account && report.jitter.empty()) return "";
  std::string out = "where the time went";
  if (account) {
    out += account->steps == 1 && report.collective_run()
               ? " (the operation, " + format_duration_ns(account->window_ns) + ")\n"
               : " (" + std::to_string(account->steps) + " steps, " +
                     format_duration_ns(account->window_ns) + ")\n";
    out += account_lines(*account, max_rows);
  } else {
    out += "\n";
  }
  if (!report.jitter.empty()) {
    out += "  jitter                  " + report.jitter + "\n";
    if (spread) {
      out += "  step time               median " + format_duration_ns(spread->p50_ns) + ", p99 " +
             format_duration_ns(spread->p99_ns) + ", max " + format_duration_ns(spread->max_ns) +
             "\n";
    }
  }
  return out + "\n";
}

}  // namespace tensorwire::report
