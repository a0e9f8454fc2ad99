// Two runs' results side by side (`tensorwire compare A.json B.json`): steps
// matched by step id, tensors within a step by (name, src, dst), each with A's
// time, B's time, B/A, and, where one side was measured on a wall clock and
// the other simulated (A from the simulator, B from verbs), simulated/measured.
// Steps and tensors found in one file only are rows of their own, never
// dropped. Deterministic text: C-locale formatting, no hash-map orders.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/results_reader.h"

namespace tensorwire::report {

// Where a time came from: the backend's own clock (the simulator's simulated
// time), or a wall clock a real backend measured; kMixed for a total that adds
// both kinds.
enum class TimeSource { kSimulated, kMeasured, kMixed };

// One side of a row. A measured wall time is preferred to the backend's time,
// since that is what a real run is judged by.
struct SideTime {
  bool present = false;      // the step or tensor is in this file
  std::optional<int64_t> ns;  // nullopt: present without a time (never finished)
  TimeSource source = TimeSource::kSimulated;
};

struct ComparisonRow {
  enum class Kind { kStep, kTensor, kTotal };
  Kind kind = Kind::kStep;
  uint64_t step_id = 0;  // kStep, kTensor
  std::string tensor;    // kTensor: the tensor's name
  uint64_t src = 0;      // kTensor
  uint64_t dst = 0;      // kTensor
  bool broadcast = false;  // kStep: a broadcast; kTensor: one of its destinations
  SideTime a;
  SideTime b;
};

struct ResultsComparison {
  // Steps by ascending id, each followed by its tensors: A's order, then the
  // ones only B has in B's order. Last, one kTotal row: the steps both files
  // timed, added up.
  std::vector<ComparisonRow> rows;
  size_t steps_in_both = 0;
  size_t steps_only_in_a = 0;
  size_t steps_only_in_b = 0;
  size_t tensors_in_both = 0;
  size_t tensors_only_in_a = 0;
  size_t tensors_only_in_b = 0;
};

ResultsComparison compare_results(const ResultsFile& a, const ResultsFile& b);

// B's time over A's; nullopt unless both have a time and A's is above zero.
std::optional<double> b_over_a(const ComparisonRow& row);

// The simulated time over the measured one, when one side is simulated and the
// other measured; nullopt otherwise (or when the measured time is zero).
std::optional<double> simulated_over_measured(const ComparisonRow& row);

// The table `tensorwire compare` prints, with a header naming both files.
std::string comparison_text(const ResultsFile& a, const ResultsFile& b,
                            const ResultsComparison& comparison);

}  // namespace tensorwire::report
