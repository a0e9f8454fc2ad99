#include "apps/tensorwire/calibration_measure.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/tensorwire/calibration_scenario.h"
#include "apps/tensorwire/launch_command.h"
#include "report/results_reader.h"

namespace tensorwire::app {
namespace {

Status failed(const std::string& message) { return Status(StatusCode::kInternal, message); }

// What one launch measured, per step in order: the step's wall time, and
// the longest Recv's (call to done: the transfer itself, without the phase
// barrier and the waits around it).
struct LaunchedSteps {
  std::vector<double> step_ns;
  std::vector<double> recv_ns;
};

// One launch of `scenario_text` with 2 ranks; the trace is written to
// `trace_path` when not empty.
Result<LaunchedSteps> launch_steps(const std::string& name, const std::string& text,
                                         const CalibrationPlan& plan,
                                         const std::string& trace_path) {
  const std::filesystem::path dir(plan.work_dir);
  const std::string scenario_path = (dir / (name + ".toml")).string();
  std::ofstream(scenario_path) << text;
  LaunchArgs args;
  args.ranks = "2";
  args.scenario_path = scenario_path;
  args.json_path = (dir / (name + ".json")).string();
  args.trace_path = trace_path;
  args.verbs = plan.verbs;
  std::ostringstream out;
  std::ostringstream err;
  if (int code = launch_command(args, out, err); code != 0) {
    return failed("calibrate: the run '" + name + "' failed (exit " + std::to_string(code) +
                  "):\n" + out.str() + err.str());
  }
  Result<report::ResultsFile> results = report::read_results_file(args.json_path);
  if (!results) return results.status();
  LaunchedSteps steps;
  for (const report::ResultsStep& s : results->steps) {
    if (!s.measured_ns) return failed("calibrate: " + name + ": a step without a measured time");
    steps.step_ns.push_back(static_cast<double>(*s.measured_ns));
    double longest = 0;
    for (const report::ResultsTensor& t : s.tensors) {
      if (t.measured_ns) longest = std::max(longest, static_cast<double>(*t.measured_ns));
    }
    steps.recv_ns.push_back(longest);
  }
  return steps;
}

// Every "register memory" slice of a trace (Chrome trace JSON, microseconds):
// its bytes (from the detail "N bytes") and duration. Zero-length ones and
// failed ones are left out: they pin nothing.
Result<std::vector<TimedSize>> registrations_in_trace(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json trace = nlohmann::json::parse(in, nullptr, false);
  if (trace.is_discarded()) return failed("calibrate: " + path + ": not a JSON trace");
  const nlohmann::json& events = trace.is_object() ? trace["traceEvents"] : trace;
  std::vector<TimedSize> out;
  if (!events.is_array()) return out;
  for (const nlohmann::json& e : events) {
    if (!e.is_object() || e.value("name", "") != "register memory" || !e.contains("dur")) continue;
    const std::string detail = e.contains("args") ? e["args"].value("detail", "") : "";
    if (detail.find("failed") != std::string::npos) continue;
    const uint64_t bytes = std::strtoull(detail.c_str(), nullptr, 10);
    if (bytes == 0 || !e["dur"].is_number()) continue;
    out.push_back({bytes, e["dur"].get<double>() * 1000});
  }
  return out;
}

// One core's memcpy rate: the median of a few copies of a buffer larger than
// the caches, first touched so that page faults stay out of it.
double measure_host_memcpy_bytes_per_s() {
  constexpr size_t kBytes = 32u << 20;
  std::vector<char> a(kBytes, 1);
  std::vector<char> b(kBytes, 2);
  std::vector<double> rates;
  for (int i = 0; i < 5; ++i) {
    const auto began = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), kBytes);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - began;
    a[static_cast<size_t>(i)] = b[kBytes - 1 - static_cast<size_t>(i)];  // keep the copy live
    if (took.count() > 0) rates.push_back(static_cast<double>(kBytes) / took.count());
  }
  return median_of(rates);
}

// Every run of one round, in the order a round runs them.
std::vector<CalibrationRun> round_runs(const CalibrationPlan& plan) {
  std::vector<CalibrationRun> runs;
  for (uint64_t bytes : plan.sizes) runs.push_back({"pingpong_" + std::to_string(bytes), 1, bytes});
  runs.push_back({"tiny_one", 1, plan.tiny_bytes});
  runs.push_back({"tiny_many", plan.many_count, plan.tiny_bytes});
  runs.push_back({"stream", plan.stream_count,
                  plan.stream_bytes != 0 ? plan.stream_bytes : plan.sizes.back()});
  return runs;
}

// Every steady step (steps 1..) of every run, by run name, over all rounds,
// and its longest Recv under "NAME/recv"; the ping-pong runs' registrations
// into `registrations`.
Result<std::map<std::string, std::vector<double>>> run_rounds(
    const CalibrationPlan& plan, std::vector<TimedSize>& registrations, std::ostream& log) {
  std::map<std::string, std::vector<double>> steady;
  for (uint32_t round = 1; round <= plan.rounds; ++round) {
    for (const CalibrationRun& run : round_runs(plan)) {
      const bool traced = run.name.starts_with("pingpong_");
      const std::string trace =
          traced ? (std::filesystem::path(plan.work_dir) /
                    (run.name + ".round" + std::to_string(round) + ".trace.json"))
                       .string()
                 : "";
      Result<LaunchedSteps> steps = launch_steps(
          run.name, tensors_scenario_text(run.name, run.count, run.bytes, plan.steps), plan, trace);
      if (!steps) return steps.status();
      const std::vector<double> these(steps->step_ns.begin() + 1, steps->step_ns.end());
      steady[run.name].insert(steady[run.name].end(), these.begin(), these.end());
      steady[run.name + "/recv"].insert(steady[run.name + "/recv"].end(),
                                        steps->recv_ns.begin() + 1, steps->recv_ns.end());
      log << "calibrate: round " << round << "/" << plan.rounds << ": " << run.name << ": "
          << median_of(these) / 1000 << " us a step\n"
          << std::flush;
      if (!traced) continue;
      Result<std::vector<TimedSize>> regs = registrations_in_trace(trace);
      if (!regs) return regs.status();
      registrations.insert(registrations.end(), regs->begin(), regs->end());
    }
  }
  return steady;
}

}  // namespace

Result<CalibrationMeasurements> measure_on_verbs(const CalibrationPlan& plan, std::ostream& log) {
  if (plan.steps < 2 || plan.rounds < 1 || plan.sizes.empty()) {
    return failed("calibrate: a plan needs sizes, 2 steps or more and a round");
  }
  CalibrationMeasurements m;
  m.steps_per_run = plan.steps;
  m.rounds = plan.rounds;
  Result<std::map<std::string, std::vector<double>>> steady =
      run_rounds(plan, m.registrations, log);
  if (!steady) return steady.status();
  const auto median_of_run = [&steady](const std::string& name) {
    return median_of((*steady)[name]);
  };
  for (uint64_t bytes : plan.sizes) {
    m.ping_pong.push_back({bytes, median_of_run("pingpong_" + std::to_string(bytes))});
    m.ping_pong_recv_ns.push_back(median_of_run("pingpong_" + std::to_string(bytes) + "/recv"));
  }
  m.many_count = plan.many_count;
  m.tiny_bytes = plan.tiny_bytes;
  m.tiny_one_ns = median_of_run("tiny_one");
  m.tiny_many_ns = median_of_run("tiny_many");
  m.stream_count = plan.stream_count;
  m.stream_bytes = plan.stream_bytes != 0 ? plan.stream_bytes : plan.sizes.back();
  m.stream_ns = median_of_run("stream");
  m.host_memcpy_bytes_per_s = measure_host_memcpy_bytes_per_s();
  return m;
}

}  // namespace tensorwire::app
