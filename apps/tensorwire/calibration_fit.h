// The fitting half of `tensorwire calibrate`: least squares that turn
// measurements taken on a real RDMA backend into the simulator's [cluster]
// parameters. Pure functions of their inputs (no I/O, no clock), so that
// synthetic measurements from known parameters test them exactly.
//
// The models, as the profile file states them (least squares of relative
// residuals for the step times, absolute ones for registrations):
//   ping-pong:     step_ns(bytes) = fixed_ns + bytes / bandwidth
//   simulator:     step_ns(bytes) = c(bytes) + kL(bytes) * nic_latency_ns
//                                 + kB(bytes) * ns_per_byte   (ns_per_byte = 1e9 / nic_bandwidth)
//                  (affine in both parameters for a ping-pong on the fluid
//                  model; kL, kB and c come from three simulations, and the
//                  residuals of the fitted simulation show whether it held)
//   registration:  register_ns(bytes) = base_ns + per_page_ns * ceil(bytes / 4096)
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace tensorwire::app {

// One measured (or simulated) duration of something of `bytes` bytes.
struct TimedSize {
  uint64_t bytes = 0;
  double ns = 0;
};

// y = intercept + slope * x, by ordinary least squares.
struct LineFit {
  double intercept = 0;
  double slope = 0;
  std::vector<double> residuals;  // measured - fitted, per point
  double rms_residual = 0;
};

// kAbsolute minimises the squared residuals; kRelative the squared
// residuals over y (every y non-zero), so that points of very different
// magnitude (a 1 KiB and a 4 MiB step) weigh alike.
enum class LineWeights { kAbsolute, kRelative };

// The line through (x, y); `what` names the data in errors. At least two
// distinct x; every value finite.
Result<LineFit> fit_line(std::span<const double> x, std::span<const double> y,
                         const std::string& what, LineWeights weights = LineWeights::kAbsolute);

struct PingPongFit {
  double fixed_ns = 0;                 // the intercept: latencies and per-message overheads
  double bandwidth_bytes_per_s = 0;    // 1 / slope
  std::vector<double> residuals_ns;    // per size
  double rms_residual_ns = 0;
};

// Fits the ping-pong model to median step times over sizes. Bad input (an
// error naming the point): fewer than 3 sizes, sizes not strictly
// increasing, a time not finite and positive, times that do not grow with
// size (the largest size not slower than the smallest: not a transfer time),
// a non-positive slope or intercept.
Result<PingPongFit> fit_ping_pong(std::span<const TimedSize> points);

struct RegistrationFit {
  double base_ns = 0;
  double per_page_ns = 0;
  std::vector<double> residuals_ns;  // per size, of its median
  double rms_residual_ns = 0;
  size_t samples = 0;
  size_t sizes = 0;  // distinct sizes: the points fitted
};

// Fits the registration model to single registrations (ibv_reg_mr calls),
// each size's calls reduced to their median first. Both parameters are kept non-negative: a negative slope (noise over a
// narrow range of sizes) becomes 0 with the mean as base; a negative base
// becomes 0 with the slope through the origin. At least 2 distinct page
// counts; every time finite and non-negative.
Result<RegistrationFit> fit_registration(std::span<const TimedSize> samples);

// The simulator's ping-pong step times, one per size, under one setting of
// the two parameters being fitted.
struct SimulatorProbe {
  double nic_latency_ns = 0;
  double ns_per_byte = 0;  // 1e9 / nic_bandwidth_bytes_per_s
  std::vector<double> step_ns;
};

struct LinkFit {
  double nic_latency_ns = 0;
  double nic_bandwidth_bytes_per_s = 0;
};

// Solves the simulator model for the (nic_latency_ns, ns_per_byte) whose
// simulated step times are closest, in least squares, to `measured_ns`.
// `base`, `more_latency` and `slower_bytes` must differ from `base` in one
// parameter each (that is how kL and kB are read off). Errors: sizes that
// do not match, probes that do not differ as required, a simulator that does
// not respond to a parameter (singular system), or a fit outside (0, inf).
Result<LinkFit> fit_link_to_simulator(std::span<const double> measured_ns,
                                      const SimulatorProbe& base,
                                      const SimulatorProbe& more_latency,
                                      const SimulatorProbe& slower_bytes);

// The median of `values` (the mean of the middle two for an even count);
// 0 for none.
double median_of(std::vector<double> values);

}  // namespace tensorwire::app
