// `tensorwire topology SCENARIO [--dot FILE]`: the cluster's topology
// ([cluster] topology) as one line of facts, and as a Graphviz DOT graph on
// stdout or in FILE (`dot -Tsvg` draws it; docs/TOPOLOGIES.md).
#pragma once

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

namespace tensorwire::app {

struct TopologyArgs {
  std::string scenario_path;
  bool dot = false;       // DOT on stdout
  std::string dot_path;   // DOT into this file
};

CLI::App* add_topology_command(CLI::App& app, TopologyArgs& args);
int topology_command(const TopologyArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensorwire::app
