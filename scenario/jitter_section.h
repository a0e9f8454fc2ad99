// [cluster.jitter]: the cluster's optional noise (core/jitter_model.h).
//
//   [cluster.jitter]
//   message_latency = { distribution = "lognormal", median = "300ns", sigma = 0.5 }
//   copy_engine = { distribution = "normal", mean = "2us", stddev = "500ns" }
//
// Each source names a distribution and exactly its parameters: normal (mean,
// stddev), lognormal (median, sigma), uniform (min, max), exponential (mean);
// durations are strings with units, sigma a number. Every mistake is a
// ScenarioError naming file:line, the key and what is wrong.
#pragma once

#include "core/jitter_model.h"
#include "scenario/toml_table_reader.h"

namespace tensorwire {

// The jitter model of the [cluster] table `cluster` reads; off when it has no
// "jitter" key.
JitterModel read_jitter_section(const TomlTableReader& cluster);

}  // namespace tensorwire
