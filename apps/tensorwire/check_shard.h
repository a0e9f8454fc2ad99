// `check --jobs N`, `--shard I/N` and `--result FILE`: one search on every
// core of a machine, or split over processes (a Slurm array job, say) whose
// result files `tensorwire check-merge` combines.
//
// --shard I/N runs shard I of N (0 <= I < N): random walks and pct the
// executions whose index is I modulo N, dfs the alternatives its search
// deals it after the first execution (model::DporSearch::keep_share). Its
// counterexample and result go to PREFIX.shard-I-of-N.* (PREFIX: --out), so
// the shards of one array job never overwrite each other's files; a
// shard's schedule replays on its own with `check --replay`.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/tensorwire/check_command.h"

namespace tensorwire::app {

void add_scale_options(CLI::App& check, CheckArgs& args);

// --jobs, or every core when it was not given.
uint32_t jobs_of(const CheckArgs& args);

// "I/N" as a shard; false when it is not one (I < N, N >= 1).
bool parse_shard(const std::string& text, uint32_t& index, uint32_t& count);

// The arguments a sharded check runs with: --out PREFIX becomes
// PREFIX.shard-I-of-N, and --result defaults to that prefix plus ".json".
CheckArgs sharded_args(const CheckArgs& args);

}  // namespace tensorwire::app
