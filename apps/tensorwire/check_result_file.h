// The result file of a search (`check --result FILE`, and every `--shard`):
// JSON that `tensorwire check-merge` reads back. Format, version 1:
//
//   {"format": "tensorwire check result", "version": 1,
//    "search": "tensorwire check SCENARIO --strategy ... (the search's first
//               line: shards of one search have the same)",
//    "scenario": {"path", "name", "hash" (FNV-1a of the file, hex)},
//    "protocol", "strategy", "exact",
//    "shard": {"index": I, "count": N} (0 of 1 unsharded),
//    "seconds", "outcome" ("nothing found", "safety", "liveness", "bad input"),
//    "schedules", "choice_points", "events", "distinct_states",
//    "cached_schedules", "exhausted",
//    "states": [fingerprints of the distinct states, sorted],
//    "transitions": [{"machine", "states": [names], "allowed": [[from, to]],
//                     "taken": [[from, to, count]]}],
//    "coverage": [{"group", "items": [{"name", "count"}]}],
//    "counterexample": null, or {"schedule": "PREFIX.schedule", "problems": [lines]}}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/explorer.h"

namespace tensorwire::app {

struct CheckResultFile {
  std::string search;
  std::string scenario_path;
  std::string scenario_name;
  uint64_t scenario_hash = 0;
  std::string protocol;
  std::string strategy;
  bool exact = false;
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
  double seconds = 0;
  // The counts, states, transitions and coverage; not the counterexample's
  // execution (its schedule file holds that).
  model::CheckReport report;
  std::string counterexample_schedule;  // empty: none
  std::vector<std::string> counterexample_problems;
};

std::string check_result_json(const CheckResultFile& result);
// A clear error naming the file and what is wrong in it.
Result<CheckResultFile> read_check_result(const std::string& path);

}  // namespace tensorwire::app
