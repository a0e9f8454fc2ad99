// The profile file `tensorwire calibrate` writes: the fitted [cluster] keys a
// scenario takes with `include = "profiles/NAME.toml"` (or each with `--set
// cluster.KEY=VALUE`), and, as comments, the models, every measurement, the
// residuals, the date and the device, so that the file says where each
// figure came from (as scenarios/profiles/README.md asks of every profile).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/tensorwire/calibration_fit.h"

namespace tensorwire::app {

// Everything measured on the real backend, as medians.
struct CalibrationMeasurements {
  std::vector<TimedSize> ping_pong;          // steady step time per size
  // The same steps' Recv alone (call to done), per size: what is left of the
  // step is the phase barrier and the waits around the transfer.
  std::vector<double> ping_pong_recv_ns;
  std::vector<TimedSize> registrations;      // single ibv_reg_mr calls (from the trace)
  uint32_t steps_per_run = 0;                // of which the first is left out
  uint32_t rounds = 0;                       // runs of each measurement, interleaved
  // Per-message software overhead: one step of `many_count` tiny tensors
  // against one step of a single one, both `tiny_bytes` each.
  uint32_t many_count = 0;
  uint64_t tiny_bytes = 0;
  double tiny_one_ns = 0;
  double tiny_many_ns = 0;
  // Streaming: `stream_count` tensors of `stream_bytes` sent at once.
  uint32_t stream_count = 0;
  uint64_t stream_bytes = 0;
  double stream_ns = 0;
  double host_memcpy_bytes_per_s = 0;  // one core's memcpy on this machine
};

// What the fit made of them.
struct CalibrationResult {
  std::string device;
  std::string date_utc;  // "2026-11-25 22:30 UTC"
  CalibrationMeasurements measured;
  PingPongFit ping_pong;
  LinkFit link;
  // The simulator with `link`: each ping-pong size, then the streaming step.
  std::vector<double> simulated_ns;
  std::optional<RegistrationFit> registration;
  std::string registration_note;  // why there is none, when there is none
};

// The per-message overhead the measurements imply: (many - one) / (count - 1).
double per_message_overhead_ns(const CalibrationMeasurements& m);

// The streaming bandwidth: count * bytes / time.
double stream_bandwidth_bytes_per_s(const CalibrationMeasurements& m);

// The profile file's text: a [cluster] table of nic_latency, nic_bandwidth,
// host_memcpy_bandwidth and (when fitted) registration_base and
// registration_per_page, in units the scenario loader reads back.
std::string profile_toml(const CalibrationResult& result);

}  // namespace tensorwire::app
