// `tensorwire protocols [--shape point-to-point|collective]`: the registered
// protocols, one line each (name, shape, workload kinds, option keys, planted
// bugs, summary), so that users and scripts (the protocol table) find every
// protocol without naming one.
#pragma once

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

namespace tensorwire::app {

struct ProtocolsArgs {
  std::string shape;  // empty: every protocol
  bool names_only = false;
};

CLI::App* add_protocols_command(CLI::App& app, ProtocolsArgs& args);
int protocols_command(const ProtocolsArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensorwire::app
