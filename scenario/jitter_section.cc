#include "scenario/jitter_section.h"

#include <array>
#include <cmath>
#include <string>
#include <string_view>

#include "scenario/scenario_limits.h"

namespace tensorwire {
namespace {

struct DistributionKeys {
  std::string_view name;
  JitterDistribution distribution;
  std::array<std::string_view, 2> parameters;  // "" when it takes one
};

constexpr std::array<DistributionKeys, 4> kDistributions = {{
    {"normal", JitterDistribution::kNormal, {"mean", "stddev"}},
    {"lognormal", JitterDistribution::kLognormal, {"median", "sigma"}},
    {"uniform", JitterDistribution::kUniform, {"min", "max"}},
    {"exponential", JitterDistribution::kExponential, {"mean", ""}},
}};

// The largest lognormal sigma: beyond it a draw is all tail.
constexpr double kMaxSigma = 10.0;

const DistributionKeys& distribution_of(const TomlTableReader& r) {
  const std::string name = r.required(r.string("distribution"), "distribution");
  for (const DistributionKeys& d : kDistributions) {
    if (d.name == name) return d;
  }
  r.fail("distribution", "unknown distribution '" + name +
                             "' (use \"normal\", \"lognormal\", \"uniform\" or \"exponential\")");
}

std::string parameter_list(const DistributionKeys& d) {
  return d.parameters[1].empty() ? std::string(d.parameters[0])
                                 : std::string(d.parameters[0]) + " and " +
                                       std::string(d.parameters[1]);
}

// Only the distribution's own parameters: a stray one is a mistake.
void reject_other_parameters(const TomlTableReader& r, const DistributionKeys& d) {
  for (const auto& [key, value] : r.table()) {
    const std::string_view k = key.str();
    if (k == "distribution" || k == d.parameters[0] || (!d.parameters[1].empty() && k == d.parameters[1])) {
      continue;
    }
    r.fail(k, "is not a parameter of the " + std::string(d.name) + " distribution (it takes " +
                  parameter_list(d) + ")");
  }
}

double read_sigma(const TomlTableReader& r) {
  const toml::node* node = r.get("sigma");
  if (node == nullptr) r.fail_missing("sigma");
  const std::optional<double> sigma = node->value<double>();
  if (!sigma) r.fail("sigma", std::string("expected a number, found ") + toml_type_name(*node));
  if (!(*sigma >= 0 && *sigma <= kMaxSigma)) {
    r.fail("sigma", "must be between 0 and " + std::to_string(static_cast<int>(kMaxSigma)));
  }
  return *sigma;
}

JitterSpec read_spec(const TomlTableReader& cluster_jitter, std::string_view key) {
  const toml::table* table = cluster_jitter.sub_table(key);
  if (table == nullptr) return {};
  TomlTableReader r(*table, cluster_jitter.key_path(key), cluster_jitter.file(),
                    {"distribution", "mean", "stddev", "median", "sigma", "min", "max"});
  const DistributionKeys& d = distribution_of(r);
  reject_other_parameters(r, d);
  const auto duration = [&r](std::string_view name) {
    return r.required(r.duration(name, JitterSpec::kMaxDrawNs), name);
  };
  JitterSpec spec;
  spec.distribution = d.distribution;
  switch (d.distribution) {
    case JitterDistribution::kNormal:
      spec.mean_ns = duration("mean");
      spec.stddev_ns = duration("stddev");
      break;
    case JitterDistribution::kLognormal:
      spec.median_ns = duration("median");
      spec.sigma = read_sigma(r);
      break;
    case JitterDistribution::kUniform:
      spec.min_ns = duration("min");
      spec.max_ns = duration("max");
      if (spec.max_ns < spec.min_ns) r.fail("max", "must be at least min");
      break;
    case JitterDistribution::kExponential:
      spec.mean_ns = duration("mean");
      break;
    case JitterDistribution::kNone:
      break;
  }
  return spec;
}

}  // namespace

JitterModel read_jitter_section(const TomlTableReader& cluster) {
  const toml::table* table = cluster.sub_table("jitter");
  if (table == nullptr) return {};
  const TomlTableReader r(*table, cluster.key_path("jitter"), cluster.file(),
                          {"message_latency", "copy_engine"});
  JitterModel model;
  model.message_latency = read_spec(r, "message_latency");
  model.copy_engine = read_spec(r, "copy_engine");
  return model;
}

}  // namespace tensorwire
