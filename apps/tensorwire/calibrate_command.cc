#include "apps/tensorwire/calibrate_command.h"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <optional>

#include "apps/tensorwire/calibration_measure.h"
#include "apps/tensorwire/calibration_scenario.h"
#include "apps/tensorwire/calibration_simulator.h"
#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/option_checks.h"
#include "apps/tensorwire/output_file.h"
#include "apps/tensorwire/scenario_argument.h"
#include "apps/tensorwire/verbs_run_command.h"
#include "scenario/units.h"

namespace tensorwire::app {
namespace {

// Ping-pong sizes beyond this would take minutes per step on soft-RoCE.
constexpr uint64_t kMaxSizeBytes = 256ull << 20;
constexpr uint32_t kMaxSteps = 1000;
constexpr uint32_t kMaxRounds = 100;

Status bad_flag(const std::string& message) {
  return Status(StatusCode::kInvalidArgument, message);
}

Result<std::vector<uint64_t>> parse_sizes(const std::string& text) {
  std::vector<uint64_t> sizes;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, comma - begin);
    Result<uint64_t> bytes = parse_bytes(item);
    if (!bytes) return bad_flag("--sizes: '" + item + "': " + bytes.status().message());
    if (*bytes == 0 || *bytes > kMaxSizeBytes) {
      return bad_flag("--sizes: '" + item + "': a size must be from 1 byte to 256MiB");
    }
    if (!sizes.empty() && *bytes <= sizes.back()) {
      return bad_flag("--sizes: '" + item + "': sizes must be strictly increasing");
    }
    sizes.push_back(*bytes);
    begin = comma + 1;
  }
  if (sizes.size() < 3) {
    return bad_flag("--sizes: at least 3 sizes are needed to fit latency and bandwidth, got " +
                    std::to_string(sizes.size()));
  }
  return sizes;
}

// A whole number in [low, high] for `flag`; `why` ends the error.
Result<uint32_t> parse_count(const std::string& text, const char* flag, uint32_t low,
                             uint32_t high, const std::string& why) {
  uint32_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || n < low ||
      n > high) {
    return bad_flag(std::string(flag) + " must be a whole number from " + std::to_string(low) +
                    " to " + std::to_string(high) + why + ", not '" + text + "'");
  }
  return n;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

// The runs model B is fitted to: every ping-pong size, then the streaming
// step (several transfers sharing the link, as in most scenarios). The many
// tiny tensors are left out: they measure a per-message CPU cost the
// simulator does not have, and would only bend the latency.
std::vector<CalibrationRun> fitted_runs(const CalibrationMeasurements& m) {
  std::vector<CalibrationRun> runs;
  for (const TimedSize& p : m.ping_pong) {
    runs.push_back({"pingpong_" + std::to_string(p.bytes), 1, p.bytes});
  }
  runs.push_back({"stream", m.stream_count, m.stream_bytes});
  return runs;
}

// The fits of everything measured; an error says which fit refused the data.
Result<CalibrationResult> fit_measurements(const CalibrationMeasurements& m, uint32_t steps) {
  CalibrationResult r;
  r.measured = m;
  Result<PingPongFit> line = fit_ping_pong(m.ping_pong);
  if (!line) return line.status();
  r.ping_pong = *line;
  // The probes: the line's figures as a start, then each parameter doubled;
  // the simulated step is affine in both, so the steps read off kL and kB.
  const std::vector<CalibrationRun> runs = fitted_runs(m);
  const double latency = std::max(1.0, std::round(line->fixed_ns / 4));
  const double per_byte = 1e9 / line->bandwidth_bytes_per_s;
  const SimulatorProbe base = simulate_runs(runs, steps, latency, per_byte);
  const SimulatorProbe more_latency = simulate_runs(runs, steps, 2 * latency, per_byte);
  const SimulatorProbe slower = simulate_runs(runs, steps, latency, 2 * per_byte);
  std::vector<double> measured;
  for (const TimedSize& p : m.ping_pong) measured.push_back(p.ns);
  measured.push_back(m.stream_ns);
  Result<LinkFit> link = fit_link_to_simulator(measured, base, more_latency, slower);
  if (!link) return link.status();
  r.link = *link;
  r.simulated_ns =
      simulate_runs(runs, steps, link->nic_latency_ns, 1e9 / link->nic_bandwidth_bytes_per_s)
          .step_ns;
  Result<RegistrationFit> reg = fit_registration(m.registrations);
  if (reg) {
    r.registration = *reg;
  } else {
    r.registration_note = reg.status().message();
  }
  return r;
}

void print_summary(const CalibrationResult& r, const std::string& path, std::ostream& out) {
  out << "calibrate: nic_latency " << r.link.nic_latency_ns / 1000 << " us, nic_bandwidth "
      << r.link.nic_bandwidth_bytes_per_s / 1e6 << " MB/s (line: fixed "
      << r.ping_pong.fixed_ns / 1000 << " us, " << r.ping_pong.bandwidth_bytes_per_s / 1e6
      << " MB/s)\n";
  if (r.registration) {
    out << "calibrate: registration " << r.registration->base_ns / 1000 << " us + "
        << r.registration->per_page_ns << " ns per page (" << r.registration->samples
        << " calls)\n";
  } else {
    out << "calibrate: registration not fitted: " << r.registration_note << "\n";
  }
  out << "calibrate: per-message overhead " << per_message_overhead_ns(r.measured) / 1000
      << " us, host memcpy " << r.measured.host_memcpy_bytes_per_s / 1e6 << " MB/s\n"
      << "calibrate: wrote " << path << "\n";
}

// A folder for the runs' files: `wanted`, or a fresh temporary one.
Result<std::string> make_work_dir(const std::string& wanted) {
  std::error_code ec;
  if (!wanted.empty()) {
    std::filesystem::create_directories(wanted, ec);
    if (ec) return bad_flag("--work-dir: cannot create '" + wanted + "': " + ec.message());
    return wanted;
  }
  std::string pattern =
      (std::filesystem::temp_directory_path(ec) / "tensorwire_calibrate_XXXXXX").string();
  if (ec || mkdtemp(pattern.data()) == nullptr) {
    return Status(StatusCode::kInternal, "cannot create a temporary folder for the runs");
  }
  return pattern;
}

}  // namespace

CLI::App* add_calibrate_command(CLI::App& app, CalibrateArgs& args) {
  CLI::App* c = app.add_subcommand(
      "calibrate", "Measure a real backend and fit the simulator's [cluster] parameters to it");
  c->add_option("--backend", args.backend, "The backend to measure (verbs)")
      ->type_name("verbs")
      ->required();
  c->add_option("--out", args.out_path, "The profile file to write (TOML)")
      ->type_name("FILE")
      ->check(non_empty_value());
  c->add_option("--sizes", args.sizes, "Ping-pong sizes, strictly increasing (at least 3)")
      ->type_name("S1,S2,...");
  c->add_option("--steps", args.steps, "Steps per run (3 to 1000; the first is left out)")
      ->type_name("N");
  c->add_option("--rounds", args.rounds,
                "Runs of every measurement, interleaved (1 to 100; medians over all)")
      ->type_name("N");
  c->add_option("--work-dir", args.work_dir,
                "Keep the generated scenarios, results and traces here (default: a temporary "
                "folder, removed)")
      ->type_name("DIR")
      ->check(non_empty_value());
  add_verbs_options(*c, args.verbs, false);
  return c;
}

int calibrate_command(const CalibrateArgs& args, std::ostream& out, std::ostream& err) {
  const auto fail = [&err](const Status& st, int code) {
    err << kErrorPrefix << st.message() << "\n";
    return code;
  };
  if (args.backend != "verbs") {
    return fail(bad_flag("--backend: calibrate measures a real backend to fit the simulator, so "
                         "only 'verbs' can be calibrated, not '" + args.backend + "'"),
                kExitBadInput);
  }
  Result<std::vector<uint64_t>> sizes = parse_sizes(args.sizes);
  if (!sizes) return fail(sizes.status(), kExitBadInput);
  Result<uint32_t> steps =
      parse_count(args.steps, "--steps", 3, kMaxSteps, " (the first step of each run is left out)");
  if (!steps) return fail(steps.status(), kExitBadInput);
  Result<uint32_t> rounds = parse_count(args.rounds, "--rounds", 1, kMaxRounds, "");
  if (!rounds) return fail(rounds.status(), kExitBadInput);
  if (!verbs_backend_available()) {
    return fail(bad_flag("calibrate runs ranks on the verbs backend, and this tensorwire was "
                         "built without it (no libibverbs/librdmacm)"),
                kExitBadInput);
  }
  Result<OutputFile> profile = OutputFile::open(args.out_path, "--out");
  if (!profile) return fail(profile.status(), kExitBadInput);
  Result<std::string> dir = make_work_dir(args.work_dir);
  if (!dir) return fail(dir.status(), kExitBadInput);
  CalibrationPlan plan;
  plan.sizes = *sizes;
  plan.steps = *steps;
  plan.rounds = *rounds;
  plan.work_dir = *dir;
  plan.verbs = args.verbs;
  Result<CalibrationMeasurements> measured = measure_on_verbs(plan, out);
  if (args.work_dir.empty()) std::filesystem::remove_all(*dir);
  if (!measured) return fail(measured.status(), kExitCheckFailed);
  Result<CalibrationResult> result = fit_measurements(*measured, *steps);
  if (!result) return fail(result.status(), kExitCheckFailed);
  result->device = args.verbs.device.empty() ? "(TENSORWIRE_RDMA_DEVICE)" : args.verbs.device;
  result->date_utc = utc_now();
  if (Status st = profile->write_and_close(profile_toml(*result)); !st.is_ok()) {
    return fail(st, kExitBadInput);
  }
  print_summary(*result, args.out_path, out);
  return kExitOk;
}

}  // namespace tensorwire::app
