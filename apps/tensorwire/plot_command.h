// `tensorwire plot SWEEP_CSV [--out DIR]`: draws a sweep's plots (PNG and SVG)
// with Debian's python3-matplotlib, through scripts/plot_sweep.py: latency and
// bandwidth against size per protocol (log axes), step time against each other
// swept parameter, and a stacked breakdown of the time per protocol where the
// results carry one.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>

namespace tensorwire::app {

struct PlotArgs {
  std::string csv_path;
  std::string out_dir;  // empty: the CSV's folder
};

CLI::App* add_plot_command(CLI::App& app, PlotArgs& args);
int plot_command(const PlotArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensorwire::app
