// `tensorwire sweep SCENARIO --set KEY=V1,V2,... [--set ...] --out DIR`: runs
// the scenario at every point of the grid of the --set axes (sweep_axes.h),
// each point one deterministic `tensorwire run` in its own process, as many at
// once as there are cores, and writes DIR/sweep.csv and DIR/sweep.json (one row
// per point, sweep_table.h). Each point leaves DIR/points/pNNNN.{json,log,key};
// a re-run reuses a point whose key (the scenario's bytes, its flags, the
// tool's version) is unchanged; the files the scenario includes (profiles,
// models) are not in the key. `--shard I/N` runs only the points whose index
// is I modulo N and writes no table: N shards (a Slurm array) sharing DIR
// fill points/, and a last `sweep` without --shard reuses them all and writes
// the table.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace tensorwire::app {

struct SweepArgs {
  std::string scenario_path;
  std::vector<std::string> axes;  // --set KEY=V1,V2,..., as typed
  std::string out_dir;
  std::string jobs;  // --jobs as typed; empty: one per core
  bool timing_only = false;
  bool plot = false;
  std::string shard;  // --shard I/N as typed; empty: every point
};

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args);

// `err` gets errors and the progress bar (drawn only when `progress` is true).
int sweep_command(const SweepArgs& args, std::ostream& out, std::ostream& err, bool progress);

}  // namespace tensorwire::app
