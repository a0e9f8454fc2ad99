// The calibration's fit (apps/tensorwire/calibration_fit.h): synthetic
// measurements made from known parameters plus noise give those parameters
// back; bad input is refused naming the point. And the profile it writes
// reads back through the scenario loader as the fitted values.
#include "apps/tensorwire/calibration_fit.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "apps/tensorwire/calibration_profile.h"
#include "apps/tensorwire/calibration_simulator.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::app {
namespace {

// Deterministic noise in [-amplitude, +amplitude] of the value: the same
// every run, different at every point.
double noisy(double value, size_t i, double amplitude) {
  return value * (1 + amplitude * std::sin(1.7 * static_cast<double>(i) + 0.3));
}

const std::vector<uint64_t> kSizes = {1024, 16384, 262144, 1048576, 4194304};

TEST(CalibrationFit, PingPongLineRecoversLatencyAndBandwidthFromNoisyMedians) {
  const double fixed_ns = 180e3;
  const double bandwidth = 60e6;  // 60 MB/s
  std::vector<TimedSize> points;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    points.push_back({kSizes[i], noisy(fixed_ns + kSizes[i] * 1e9 / bandwidth, i, 0.03)});
  }
  Result<PingPongFit> fit = fit_ping_pong(points);
  ASSERT_TRUE(fit.is_ok()) << fit.status().message();
  EXPECT_NEAR(fit->fixed_ns, fixed_ns, 0.15 * fixed_ns);
  EXPECT_NEAR(fit->bandwidth_bytes_per_s, bandwidth, 0.05 * bandwidth);
  ASSERT_EQ(fit->residuals_ns.size(), points.size());
  EXPECT_GT(fit->rms_residual_ns, 0);
}

TEST(CalibrationFit, PingPongRefusesTooFewSizesNamingHowMany) {
  std::vector<TimedSize> points = {{1024, 100e3}, {4096, 120e3}};
  Result<PingPongFit> fit = fit_ping_pong(points);
  ASSERT_FALSE(fit.is_ok());
  EXPECT_NE(fit.status().message().find("at least 3 sizes"), std::string::npos)
      << fit.status().message();
}

TEST(CalibrationFit, PingPongRefusesSizesNotIncreasingNamingThePoint) {
  std::vector<TimedSize> points = {{1024, 100e3}, {65536, 200e3}, {4096, 120e3}};
  Result<PingPongFit> fit = fit_ping_pong(points);
  ASSERT_FALSE(fit.is_ok());
  EXPECT_NE(fit.status().message().find("point 2 (4096 bytes)"), std::string::npos)
      << fit.status().message();
  EXPECT_NE(fit.status().message().find("strictly increasing"), std::string::npos);
}

TEST(CalibrationFit, PingPongRefusesTimesThatDoNotGrowWithSize) {
  std::vector<TimedSize> points = {{1024, 300e3}, {65536, 200e3}, {1048576, 250e3}};
  Result<PingPongFit> fit = fit_ping_pong(points);
  ASSERT_FALSE(fit.is_ok());
  EXPECT_NE(fit.status().message().find("do not grow with size"), std::string::npos)
      << fit.status().message();
}

TEST(CalibrationFit, PingPongRefusesATimeThatIsNotFiniteAndPositive) {
  std::vector<TimedSize> points = {{1024, 100e3}, {4096, NAN}, {65536, 300e3}};
  Result<PingPongFit> fit = fit_ping_pong(points);
  ASSERT_FALSE(fit.is_ok());
  EXPECT_NE(fit.status().message().find("point 1"), std::string::npos) << fit.status().message();
}

TEST(CalibrationFit, RegistrationRecoversBaseAndPerPageFromNoisyCalls) {
  std::vector<TimedSize> samples;
  for (size_t i = 0; i < 40; ++i) {
    const uint64_t bytes = 4096ull << (i % 11);
    samples.push_back({bytes, noisy(30e3 + 250.0 * static_cast<double>(bytes / 4096), i, 0.05)});
  }
  Result<RegistrationFit> fit = fit_registration(samples);
  ASSERT_TRUE(fit.is_ok()) << fit.status().message();
  EXPECT_NEAR(fit->base_ns, 30e3, 3e3);
  EXPECT_NEAR(fit->per_page_ns, 250, 20);
  EXPECT_EQ(fit->samples, samples.size());
}

TEST(CalibrationFit, RegistrationIgnoresOneDescheduledCallPerSize) {
  std::vector<TimedSize> samples;
  for (uint64_t pages : {1, 4, 16, 64, 256}) {
    for (int k = 0; k < 3; ++k) samples.push_back({pages * 4096, 20e3 + 100.0 * pages});
    samples.push_back({pages * 4096, 5e6});  // a call the VM descheduled
  }
  Result<RegistrationFit> fit = fit_registration(samples);
  ASSERT_TRUE(fit.is_ok()) << fit.status().message();
  EXPECT_NEAR(fit->base_ns, 20e3, 1);
  EXPECT_NEAR(fit->per_page_ns, 100, 0.01);
  EXPECT_EQ(fit->sizes, 5u);
}

TEST(CalibrationFit, RegistrationKeepsBothParametersNonNegative) {
  // Larger registrations slightly faster: noise, not a negative page cost.
  std::vector<TimedSize> samples = {{4096, 40e3}, {8192, 39e3}, {16384, 38e3}};
  Result<RegistrationFit> fit = fit_registration(samples);
  ASSERT_TRUE(fit.is_ok()) << fit.status().message();
  EXPECT_EQ(fit->per_page_ns, 0);
  EXPECT_NEAR(fit->base_ns, 39e3, 1);
}

TEST(CalibrationFit, RegistrationRefusesOnePageCountOnly) {
  std::vector<TimedSize> samples = {{4096, 40e3}, {4000, 41e3}};
  Result<RegistrationFit> fit = fit_registration(samples);
  ASSERT_FALSE(fit.is_ok());
  EXPECT_NE(fit.status().message().find("same x"), std::string::npos) << fit.status().message();
}

TEST(CalibrationFit, LinkFitThroughTheSimulatorRecoversTheParametersThatMadeTheMeasurements) {
  // "Measurements": the simulator itself with known parameters, plus noise.
  const double latency_ns = 45e3;
  const double bandwidth = 80e6;
  SimulatorProbe truth = simulate_ping_pong(kSizes, 5, latency_ns, 1e9 / bandwidth);
  std::vector<double> measured;
  for (size_t i = 0; i < truth.step_ns.size(); ++i) {
    measured.push_back(noisy(truth.step_ns[i], i, 0.02));
  }
  const double l0 = 10e3;
  const double b0 = 1e9 / 200e6;
  Result<LinkFit> fit = fit_link_to_simulator(measured, simulate_ping_pong(kSizes, 5, l0, b0),
                                              simulate_ping_pong(kSizes, 5, 2 * l0, b0),
                                              simulate_ping_pong(kSizes, 5, l0, 2 * b0));
  ASSERT_TRUE(fit.is_ok()) << fit.status().message();
  EXPECT_NEAR(fit->nic_latency_ns, latency_ns, 0.15 * latency_ns);
  EXPECT_NEAR(fit->nic_bandwidth_bytes_per_s, bandwidth, 0.05 * bandwidth);
}

TEST(CalibrationFit, LinkFitRefusesProbesThatChangeBothParameters) {
  SimulatorProbe base{1000, 1, {10, 20}};
  SimulatorProbe both{2000, 2, {20, 40}};
  Result<LinkFit> fit = fit_link_to_simulator(std::vector<double>{15, 30}, base, both, both);
  ASSERT_FALSE(fit.is_ok());
  EXPECT_NE(fit.status().message().find("exactly one parameter"), std::string::npos);
}

TEST(CalibrationFit, LinkFitRefusesMeasurementsFasterThanTheSimulatorCanBe) {
  // Fixed costs of 1 ms that no latency or bandwidth removes; measured 10 us.
  SimulatorProbe base{1000, 1, {1e6 + 1000 + 100, 1e6 + 1000 + 1000}};
  SimulatorProbe lat{2000, 1, {1e6 + 2000 + 100, 1e6 + 2000 + 1000}};
  SimulatorProbe slow{1000, 2, {1e6 + 1000 + 200, 1e6 + 1000 + 2000}};
  Result<LinkFit> fit = fit_link_to_simulator(std::vector<double>{10e3, 11e3}, base, lat, slow);
  ASSERT_FALSE(fit.is_ok());
  EXPECT_NE(fit.status().message().find("outside the model"), std::string::npos)
      << fit.status().message();
}

TEST(CalibrationProfile, AnIncludedProfileGivesTheScenarioTheFittedValues) {
  CalibrationResult r;
  r.device = "rxe0";
  r.date_utc = "2026-11-25 22:00 UTC";
  r.measured.ping_pong = {{1024, 200e3}, {65536, 900e3}, {1048576, 12e6}};
  r.measured.steps_per_run = 7;
  r.measured.host_memcpy_bytes_per_s = 2.5e9;
  r.ping_pong = {190e3, 88e6, {1, -2, 1}, 1.4};
  r.link = {47321.4, 91.234567e6};
  r.registration = RegistrationFit{31234.6, 250.4, {}, 10, 12, 3};
  std::string pattern = (std::filesystem::temp_directory_path() / "tw_profile_XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path dir(pattern);
  std::ofstream(dir / "fitted.toml") << profile_toml(r);
  std::ofstream(dir / "s.toml") << "name = \"s\"\ninclude = \"fitted.toml\"\n"
                                   "[cluster]\nnodes = 2\n[workload]\nkind = \"tensors\"\n"
                                   "steps = 1\n[[workload.tensor]]\nname = \"a\"\nsrc = 0\n"
                                   "dst = 1\ndtype = \"uint8\"\nbytes = 16\n";
  const Scenario s = load_scenario_file((dir / "s.toml").string());
  EXPECT_EQ(s.cluster.nic_latency_ns, 47321);
  EXPECT_NEAR(s.cluster.nic_bandwidth_bytes_per_s, 91.234567e6, 1);
  EXPECT_NEAR(s.cluster.host_memcpy_bandwidth_bytes_per_s, 2.5e9, 1e3);
  EXPECT_EQ(s.cluster.registration_base_ns, 31235);
  EXPECT_EQ(s.cluster.registration_per_page_ns, 250);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tensorwire::app
