#include "apps/tensorwire/calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tensorwire::app {
namespace {

constexpr double kPageBytes = 4096;

Status bad(const std::string& message) {
  return Status(StatusCode::kInvalidArgument, message);
}

std::string point_name(const std::string& what, size_t i, uint64_t bytes) {
  return what + " point " + std::to_string(i) + " (" + std::to_string(bytes) + " bytes)";
}

void fill_residuals(std::span<const double> x, std::span<const double> y, double intercept,
                    double slope, std::vector<double>& residuals, double& rms) {
  residuals.clear();
  double sum_sq = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    residuals.push_back(y[i] - (intercept + slope * x[i]));
    sum_sq += residuals.back() * residuals.back();
  }
  rms = x.empty() ? 0 : std::sqrt(sum_sq / static_cast<double>(x.size()));
}

double pages_of(uint64_t bytes) {
  return std::max(1.0, std::ceil(static_cast<double>(bytes) / kPageBytes));
}

}  // namespace

Result<LineFit> fit_line(std::span<const double> x, std::span<const double> y,
                         const std::string& what, LineWeights weights) {
  if (x.size() != y.size()) return bad(what + ": as many x as y values are needed");
  if (x.size() < 2) return bad(what + ": at least 2 points are needed, got " +
                               std::to_string(x.size()));
  std::vector<double> w;
  double sum_w = 0;
  double mean_x = 0;
  double mean_y = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) {
      return bad(what + ": point " + std::to_string(i) + " is not a finite number");
    }
    if (weights == LineWeights::kRelative && y[i] == 0) {
      return bad(what + ": point " + std::to_string(i) + " is 0, it has no relative error");
    }
    w.push_back(weights == LineWeights::kRelative ? 1 / (y[i] * y[i]) : 1.0);
    sum_w += w.back();
    mean_x += w.back() * x[i];
    mean_y += w.back() * y[i];
  }
  mean_x /= sum_w;
  mean_y /= sum_w;
  double sxx = 0;
  double sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += w[i] * (x[i] - mean_x) * (x[i] - mean_x);
    sxy += w[i] * (x[i] - mean_x) * (y[i] - mean_y);
  }
  if (!(sxx > 0)) return bad(what + ": every point has the same x; a line needs two distinct");
  LineFit fit;
  fit.slope = sxy / sxx;
  fit.intercept = mean_y - fit.slope * mean_x;
  fill_residuals(x, y, fit.intercept, fit.slope, fit.residuals, fit.rms_residual);
  return fit;
}

Result<PingPongFit> fit_ping_pong(std::span<const TimedSize> points) {
  const std::string what = "ping-pong";
  if (points.size() < 3) {
    return bad(what + ": at least 3 sizes are needed to fit latency and bandwidth, got " +
               std::to_string(points.size()));
  }
  std::vector<double> x;
  std::vector<double> y;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!std::isfinite(points[i].ns) || points[i].ns <= 0) {
      return bad(point_name(what, i, points[i].bytes) + ": time must be finite and positive");
    }
    if (i > 0 && points[i].bytes <= points[i - 1].bytes) {
      return bad(point_name(what, i, points[i].bytes) +
                 ": sizes must be strictly increasing (the previous was " +
                 std::to_string(points[i - 1].bytes) + " bytes)");
    }
    x.push_back(static_cast<double>(points[i].bytes));
    y.push_back(points[i].ns);
  }
  if (y.back() <= y.front()) {
    return bad(what + ": times do not grow with size (" + std::to_string(points.back().bytes) +
               " bytes took no longer than " + std::to_string(points.front().bytes) +
               "): not a transfer time; measure larger sizes");
  }
  Result<LineFit> line = fit_line(x, y, what, LineWeights::kRelative);
  if (!line) return line.status();
  if (line->slope <= 0) return bad(what + ": the fitted time per byte is not positive");
  if (line->intercept <= 0) {
    return bad(what + ": the fitted fixed time is not positive (" +
               std::to_string(line->intercept) + " ns); measure smaller sizes");
  }
  return PingPongFit{line->intercept, 1e9 / line->slope, line->residuals, line->rms_residual};
}

Result<RegistrationFit> fit_registration(std::span<const TimedSize> samples) {
  const std::string what = "registration";
  // The median of each size's calls: on a busy machine one call in several
  // is descheduled for milliseconds, and a mean would follow those.
  std::map<uint64_t, std::vector<double>> by_size;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i].ns) || samples[i].ns < 0) {
      return bad(point_name(what, i, samples[i].bytes) + ": time must be finite and >= 0");
    }
    by_size[samples[i].bytes].push_back(samples[i].ns);
  }
  std::vector<double> x;
  std::vector<double> y;
  for (const auto& [bytes, times] : by_size) {
    x.push_back(pages_of(bytes));
    y.push_back(median_of(times));
  }
  Result<LineFit> line = fit_line(x, y, what);
  if (!line) return line.status();
  double base = line->intercept;
  double per_page = line->slope;
  if (per_page < 0) {
    per_page = 0;
    base = 0;
    for (double v : y) base += v / static_cast<double>(y.size());
  } else if (base < 0) {
    double sxy = 0;
    double sxx = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      sxy += x[i] * y[i];
      sxx += x[i] * x[i];
    }
    base = 0;
    per_page = sxy / sxx;
  }
  RegistrationFit fit{base, per_page, {}, 0, samples.size(), x.size()};
  fill_residuals(x, y, base, per_page, fit.residuals_ns, fit.rms_residual_ns);
  return fit;
}

Result<LinkFit> fit_link_to_simulator(std::span<const double> measured_ns,
                                      const SimulatorProbe& base,
                                      const SimulatorProbe& more_latency,
                                      const SimulatorProbe& slower_bytes) {
  const size_t n = measured_ns.size();
  if (n < 2 || base.step_ns.size() != n || more_latency.step_ns.size() != n ||
      slower_bytes.step_ns.size() != n) {
    return bad("simulator fit: every probe needs one step time per measured size (" +
               std::to_string(n) + "), and at least 2 sizes");
  }
  const double d_latency = more_latency.nic_latency_ns - base.nic_latency_ns;
  const double d_per_byte = slower_bytes.ns_per_byte - base.ns_per_byte;
  if (!(d_latency > 0) || more_latency.ns_per_byte != base.ns_per_byte || !(d_per_byte > 0) ||
      slower_bytes.nic_latency_ns != base.nic_latency_ns) {
    return bad("simulator fit: probes must raise exactly one parameter each over the base");
  }
  // Normal equations of min sum ((c + kL*L + kB*B - m) / m)^2 over (L, B):
  // relative errors, so the largest sizes do not drown the latency.
  double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(measured_ns[i]) || measured_ns[i] <= 0) {
      return bad("simulator fit: measured point " + std::to_string(i) +
                 " is not finite and positive");
    }
    const double w = 1 / (measured_ns[i] * measured_ns[i]);
    const double k_l = (more_latency.step_ns[i] - base.step_ns[i]) / d_latency;
    const double k_b = (slower_bytes.step_ns[i] - base.step_ns[i]) / d_per_byte;
    const double c = base.step_ns[i] - k_l * base.nic_latency_ns - k_b * base.ns_per_byte;
    const double target = measured_ns[i] - c;
    a11 += w * k_l * k_l;
    a12 += w * k_l * k_b;
    a22 += w * k_b * k_b;
    b1 += w * k_l * target;
    b2 += w * k_b * target;
  }
  const double det = a11 * a22 - a12 * a12;
  if (!(a11 > 0) || !(a22 > 0) || !(det > 1e-9 * a11 * a22)) {
    return bad("simulator fit: the simulated step does not respond to latency and bandwidth "
               "independently over these sizes (singular system); use sizes further apart");
  }
  const double latency = (b1 * a22 - b2 * a12) / det;
  const double per_byte = (a11 * b2 - a12 * b1) / det;
  if (!std::isfinite(latency) || latency <= 0 || !std::isfinite(per_byte) || per_byte <= 0) {
    return bad("simulator fit: the best fit is outside the model (nic_latency " +
               std::to_string(latency) + " ns, " + std::to_string(per_byte) +
               " ns per byte); the simulator's other costs exceed what was measured");
  }
  return LinkFit{latency, 1e9 / per_byte};
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace tensorwire::app
