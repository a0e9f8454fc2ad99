#include "apps/tensorwire/calibration_profile.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace tensorwire::app {
namespace {

std::string number(double v, int digits = 4) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Whole nanoseconds: the loader reads durations as integer ns.
std::string duration_value(double ns) {
  return "\"" + std::to_string(static_cast<long long>(std::llround(std::max(0.0, ns)))) + "ns\"";
}

std::string bandwidth_value(double bytes_per_s) {
  return "\"" + number(bytes_per_s / 1e6, 10) + "MB/s\"";
}

std::string us(double ns) { return fixed(ns / 1000, 1) + " us"; }

std::string mb_per_s(double bytes_per_s) { return fixed(bytes_per_s / 1e6, 2) + " MB/s"; }

void write_ping_pong(std::ostream& o, const CalibrationResult& r) {
  const CalibrationMeasurements& m = r.measured;
  o << "# Ping-pong (one tensor rank 0 -> 1 per step, the tensors workload's default\n#   protocol, host memory):\n"
    << "# median steady step per size over " << m.rounds << " interleaved runs of "
    << m.steps_per_run << " steps (the first of each left out).\n"
    << "#   model A (line):      step_ns(bytes) = fixed_ns + bytes / bandwidth\n"
    << "#     (least squares of relative residuals: every size weighs alike)\n"
    << "#     fixed " << us(r.ping_pong.fixed_ns) << ", bandwidth "
    << mb_per_s(r.ping_pong.bandwidth_bytes_per_s) << ", rms residual "
    << us(r.ping_pong.rms_residual_ns) << "\n"
    << "#   model B (simulator): the simulator's own step of each run, affine in nic_latency\n"
    << "#     and 1/nic_bandwidth, fitted by least squares of relative residuals to these\n"
    << "#     medians and the streaming step below (the keys below); the simulator then\n"
    << "#     predicts the steps in the last column.\n"
    << "#   recv: the step's Recv alone (call to done); the rest of the measured step is the\n"
    << "#     phase barrier and the rank's waits, which the simulator does not have: the fit\n"
    << "#     puts them in nic_latency (see apps/tensorwire/README.md, blind spots).\n"
    << "#   bytes        measured     recv         line residual   simulated\n";
  for (size_t i = 0; i < m.ping_pong.size(); ++i) {
    char row[200];
    std::snprintf(row, sizeof row, "#   %-12llu %-12s %-12s %-15s %s\n",
                  static_cast<unsigned long long>(m.ping_pong[i].bytes),
                  us(m.ping_pong[i].ns).c_str(),
                  i < m.ping_pong_recv_ns.size() ? us(m.ping_pong_recv_ns[i]).c_str() : "",
                  i < r.ping_pong.residuals_ns.size() ? us(r.ping_pong.residuals_ns[i]).c_str() : "",
                  i < r.simulated_ns.size() ? us(r.simulated_ns[i]).c_str() : "");
    o << row;
  }
}

void write_other_measurements(std::ostream& o, const CalibrationResult& r) {
  const CalibrationMeasurements& m = r.measured;
  o << "# Streaming: " << m.stream_count << " tensors of " << m.stream_bytes
    << " bytes at once: " << us(m.stream_ns) << " a step, "
    << mb_per_s(stream_bandwidth_bytes_per_s(m)) << "; simulated "
    << (r.simulated_ns.size() > m.ping_pong.size() ? us(r.simulated_ns.back()) : "-") << ".\n"
    << "# Per-message software overhead: " << m.many_count << " tensors of " << m.tiny_bytes
    << " bytes in one step took " << us(m.tiny_many_ns) << ", one took " << us(m.tiny_one_ns)
    << ":\n#   " << us(per_message_overhead_ns(m))
    << " per extra message. The simulator has no per-message CPU cost: a step of many\n"
    << "#   small tensors is predicted too fast (a blind spot; see apps/tensorwire/README.md).\n";
  if (r.registration) {
    o << "# Registration: " << r.registration->samples
      << " ibv_reg_mr calls timed in the ranks' traces, " << r.registration->sizes
      << " sizes,\n"
      << "#   model: register_ns = base + per_page * ceil(bytes / 4096) over each size's\n"
      << "#   median call, rms residual "
      << us(r.registration->rms_residual_ns) << ".\n";
  } else {
    o << "# Registration: not fitted (" << r.registration_note
      << "); the scenario's own keys or the defaults apply.\n";
  }
  o << "# Host memcpy: one core copying a buffer here: " << mb_per_s(m.host_memcpy_bytes_per_s)
    << ".\n";
  // Timing cudaMemcpy needs a GPU; the machines this was written on (the rxe
  // VM) have none, so no pcie key is fitted and the file says so.
  o << "# Copy engine (pcie_bandwidth, pcie_latency): not measured (calibrate times no\n"
    << "#   GPU copies; the rxe VM has no GPU); the scenario's own keys or the defaults apply.\n";
}

}  // namespace

double per_message_overhead_ns(const CalibrationMeasurements& m) {
  if (m.many_count < 2) return 0;
  return (m.tiny_many_ns - m.tiny_one_ns) / static_cast<double>(m.many_count - 1);
}

double stream_bandwidth_bytes_per_s(const CalibrationMeasurements& m) {
  if (m.stream_ns <= 0) return 0;
  return static_cast<double>(m.stream_count) * static_cast<double>(m.stream_bytes) * 1e9 /
         m.stream_ns;
}

std::string profile_toml(const CalibrationResult& r) {
  std::ostringstream o;
  o << "# Calibrated by `tensorwire calibrate --backend verbs --device " << r.device << "` on "
    << r.date_utc << ".\n"
    << "# Fitted to this machine and device only: include it in scenarios meant to\n"
    << "# predict runs here (include = \"profiles/NAME.toml\", or --set cluster.KEY=VALUE).\n";
  write_ping_pong(o, r);
  write_other_measurements(o, r);
  o << "[cluster]\n"
    << "nic_latency = " << duration_value(r.link.nic_latency_ns) << "\n"
    << "nic_bandwidth = " << bandwidth_value(r.link.nic_bandwidth_bytes_per_s) << "\n"
    << "host_memcpy_bandwidth = " << bandwidth_value(r.measured.host_memcpy_bytes_per_s) << "\n";
  if (r.registration) {
    o << "registration_base = " << duration_value(r.registration->base_ns) << "\n"
      << "registration_per_page = " << duration_value(r.registration->per_page_ns) << "\n";
  }
  return o.str();
}

}  // namespace tensorwire::app
