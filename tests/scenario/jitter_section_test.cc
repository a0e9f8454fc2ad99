// [cluster.jitter]: what it reads, and every mistake named by file:line and key.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "scenario/scenario_loader.h"
#include "tests/scenario/scenario_error_text.h"

namespace tensorwire {
namespace {

// A valid scenario whose [cluster.jitter] table starts on line 4.
std::string with_jitter(const std::string& jitter_lines) {
  return "[cluster]\nnodes = 2\n[cluster.jitter]\n" + jitter_lines +
         "[workload]\nkind = \"tensors\"\nsteps = 1\n[[workload.tensor]]\nname = \"a\"\nsrc = 0\ndst = 1\n";
}

void expect_error(const std::string& jitter_lines, std::initializer_list<std::string> parts) {
  const std::string e = testing::scenario_error_of(with_jitter(jitter_lines), "t.toml");
  for (const std::string& part : parts) {
    EXPECT_NE(e.find(part), std::string::npos) << "missing \"" << part << "\" in: " << e;
  }
}

TEST(JitterSection, IsOffWithoutTheTable) {
  const Scenario s = load_scenario_string(
      "[workload]\nkind = \"tensors\"\nsteps = 1\n[[workload.tensor]]\nname = \"a\"\nsrc = 0\ndst = 1\n",
      "t.toml", "");
  EXPECT_FALSE(s.cluster.jitter.enabled());
}

TEST(JitterSection, ReadsEachDistributionWithItsParameters) {
  const Scenario s = load_scenario_string(
      with_jitter("message_latency = { distribution = \"lognormal\", median = \"300ns\", sigma = 0.5 }\n"
                  "copy_engine = { distribution = \"uniform\", min = \"1us\", max = \"3us\" }\n"),
      "t.toml", "");
  const JitterModel& j = s.cluster.jitter;
  EXPECT_EQ(j.message_latency.distribution, JitterDistribution::kLognormal);
  EXPECT_EQ(j.message_latency.median_ns, 300);
  EXPECT_DOUBLE_EQ(j.message_latency.sigma, 0.5);
  EXPECT_EQ(j.copy_engine.distribution, JitterDistribution::kUniform);
  EXPECT_EQ(j.copy_engine.min_ns, 1000);
  EXPECT_EQ(j.copy_engine.max_ns, 3000);
  EXPECT_EQ(j.describe(),
            "message latency lognormal(median 300 ns, sigma 0.5), copy engine uniform(1.00 us to 3.00 us)");
}

TEST(JitterSection, ASubTableWorksLikeAnInlineOne) {
  const Scenario s = load_scenario_string(
      with_jitter("[cluster.jitter.message_latency]\ndistribution = \"normal\"\nmean = \"1us\"\n"
                  "stddev = \"200ns\"\n"),
      "t.toml", "");
  EXPECT_EQ(s.cluster.jitter.message_latency.distribution, JitterDistribution::kNormal);
  EXPECT_EQ(s.cluster.jitter.message_latency.stddev_ns, 200);
  EXPECT_FALSE(s.cluster.jitter.copy_engine.enabled());
}

TEST(JitterSection, AnUnknownDistributionIsNamedWithTheChoices) {
  expect_error("message_latency = { distribution = \"gamma\", mean = \"1us\" }\n",
               {"t.toml:4:", "cluster.jitter.message_latency.distribution", "unknown distribution 'gamma'",
                "\"lognormal\""});
}

TEST(JitterSection, AMissingParameterIsNamed) {
  expect_error("message_latency = { distribution = \"normal\", mean = \"1us\" }\n",
               {"t.toml:4:", "cluster.jitter.message_latency.stddev"});
}

TEST(JitterSection, AnotherDistributionsParameterIsRejected) {
  expect_error("copy_engine = { distribution = \"exponential\", mean = \"1us\", sigma = 2 }\n",
               {"t.toml:4:", "cluster.jitter.copy_engine.sigma",
                "not a parameter of the exponential distribution (it takes mean)"});
}

TEST(JitterSection, BadValuesAreNamed) {
  expect_error("message_latency = { distribution = \"lognormal\", median = \"1us\", sigma = 11 }\n",
               {"t.toml:4:", "cluster.jitter.message_latency.sigma", "between 0 and 10"});
  expect_error("message_latency = { distribution = \"lognormal\", median = \"1us\", sigma = \"x\" }\n",
               {"cluster.jitter.message_latency.sigma", "expected a number, found a string"});
  expect_error("message_latency = { distribution = \"uniform\", min = \"2us\", max = \"1us\" }\n",
               {"t.toml:4:", "cluster.jitter.message_latency.max", "must be at least min"});
  expect_error("message_latency = { distribution = \"normal\", mean = \"fast\", stddev = \"1ns\" }\n",
               {"t.toml:4:", "cluster.jitter.message_latency.mean"});
  expect_error("message_latency = { distribution = \"exponential\", mean = \"2s\" }\n",
               {"cluster.jitter.message_latency.mean", "too long"});
  expect_error("wire = { distribution = \"normal\" }\n",
               {"t.toml:4:", "cluster.jitter.wire", "message_latency"});
}

}  // namespace
}  // namespace tensorwire
