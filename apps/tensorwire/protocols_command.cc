#include "apps/tensorwire/protocols_command.h"

#include <string_view>
#include <vector>

#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/scenario_argument.h"
#include "core/protocols/protocol_registry.h"

namespace tensorwire::app {
namespace {

const char* shape_name(ProtocolShape shape) {
  return shape == ProtocolShape::kPointToPoint ? "point-to-point" : "collective";
}

std::string joined(const std::vector<std::string_view>& words) {
  std::string out;
  for (std::string_view w : words) out += (out.empty() ? "" : ",") + std::string(w);
  return out.empty() ? "-" : out;
}

}  // namespace

CLI::App* add_protocols_command(CLI::App& app, ProtocolsArgs& args) {
  CLI::App* protocols = app.add_subcommand(
      "protocols", "List the registered protocols: name, shape, workload kinds, options, planted bugs");
  protocols->add_option("--shape", args.shape, "Only protocols of this shape")
      ->type_name("point-to-point|collective");
  protocols->add_flag("--names", args.names_only, "Print the names alone, one per line");
  return protocols;
}

int protocols_command(const ProtocolsArgs& args, std::ostream& out, std::ostream& err) {
  if (!args.shape.empty() && args.shape != "point-to-point" && args.shape != "collective") {
    err << kErrorPrefix << "--shape must be 'point-to-point' or 'collective', not '" << args.shape
        << "'\n";
    return kExitBadInput;
  }
  for (const ProtocolDescriptor* p : registered_protocols()) {
    if (!args.shape.empty() && args.shape != shape_name(p->shape())) continue;
    if (args.names_only) {
      out << p->name() << "\n";
      continue;
    }
    out << p->name() << "\n  shape: " << shape_name(p->shape())
        << "\n  workloads: " << joined(p->workload_kinds())
        << "\n  options ([protocol." << p->name() << "]): " << joined(p->option_keys())
        << "\n  planted bugs (check --plant-bug): " << joined(p->planted_bugs())
        << "\n  " << p->summary() << "\n";
  }
  return kExitOk;
}

}  // namespace tensorwire::app
