// Reads a results JSON file (report/results_json.h's schema) back into the few
// numbers `tensorwire compare` sets side by side: per step and per tensor, the
// time on the backend's own clock and, where a real backend measured one, the
// wall time; a broadcast's results as one step whose tensors are its
// destinations. Everything it reads is validated: a missing file, text that is
// not JSON, a missing field, a wrong type or a negative time is an error that
// names the file and the JSON path ("b.json: steps[2].per_tensor[0].latency_ns:
// expected a number, got a string"), never an exception or a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tensorwire::report {

// One Recv of a step, keyed by (name, src, dst): a step never has two Recvs
// with the same key (the rendezvous could not tell them apart).
struct ResultsTensor {
  std::string name;
  uint64_t src = 0;
  uint64_t dst = 0;
  // latency_ns: Recv call to done on the backend's clock; nullopt when the
  // Recv never completed.
  std::optional<int64_t> backend_ns;
  std::optional<int64_t> measured_ns;  // wall time; absent for the simulator
  // A broadcast's destination (name: its memory, "node3/gpu1"; src, dst: 0):
  // backend_ns is when it held every byte.
  bool destination = false;
};

struct ResultsStep {
  uint64_t step_id = 0;
  // A step that never finished has no meaningful duration (and the writer's
  // duration_ns can be negative then), so backend_ns is nullopt.
  std::optional<int64_t> backend_ns;   // duration_ns
  std::optional<int64_t> measured_ns;  // wall time; absent for the simulator
  std::vector<ResultsTensor> tensors;  // in file order
  // A broadcast reads as one step: backend_ns its finish, its destinations
  // the tensors.
  bool broadcast = false;
};

struct ResultsFile {
  std::string path;  // as given, for messages
  std::string backend;
  std::string scenario_name;
  uint64_t seed = 0;
  std::vector<ResultsStep> steps;  // in file order, step ids unique
};

// The results in `path`, or an error whose message starts "PATH: " (kNotFound
// when the file cannot be opened, kInvalidArgument for anything in it).
Result<ResultsFile> read_results_file(const std::string& path);

// The same from text already in memory; `path` only names it in messages.
Result<ResultsFile> parse_results_json(std::string_view text, const std::string& path);

}  // namespace tensorwire::report
