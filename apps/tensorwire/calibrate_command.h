// `tensorwire calibrate --backend verbs --device DEV [--out PROFILE.toml]
// [--sizes S1,S2,...] [--steps N] [--rounds N] [--work-dir DIR]`: measures the real
// backend (calibration_measure.h), fits the simulator's [cluster] parameters
// to it (calibration_fit.h, calibration_simulator.h) and writes a profile
// that scenarios include (calibration_profile.h).
#pragma once

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/tensorwire/run_command.h"

namespace tensorwire::app {

struct CalibrateArgs {
  std::string backend;                          // only "verbs" is calibrated
  std::string out_path = "calibrated_profile.toml";
  std::string sizes = "1KiB,16KiB,256KiB,1MiB,4MiB";
  std::string steps = "7";
  std::string rounds = "3";
  std::string work_dir;  // empty: a temporary folder, removed afterwards
  VerbsArgs verbs;       // without rank/world/coordinator
};

CLI::App* add_calibrate_command(CLI::App& app, CalibrateArgs& args);

int calibrate_command(const CalibrateArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensorwire::app
