#include "apps/tensorwire/topology_command.h"

#include <optional>
#include <utility>

#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/output_file.h"
#include "apps/tensorwire/scenario_argument.h"
#include "backend_sim/fabric.h"
#include "backend_sim/fabric_dot.h"

namespace tensorwire::app {
namespace {

// "leaf_spine: 32 nodes, 8 leaves of 4, 2 spines, leaf-spine links 100 Gbps (2:1)".
void describe(const Cluster& c, std::ostream& out) {
  const sim::Fabric fabric(c);
  const ClusterTopology& t = c.topology;
  out << topology_kind_name(t.kind) << ": " << c.nodes << " nodes";
  if (t.kind == TopologyKind::kLeafSpine) {
    out << ", " << fabric.leaves() << " leaves of " << t.leaf_nodes << ", " << t.spines
        << " spines, each leaf-spine link " << fabric.capacity(fabric.uplink(0, 0)) * 8 / 1e9
        << " Gbps per direction (" << t.oversubscription << ":1 oversubscribed)";
  }
  if (t.kind == TopologyKind::kRail) out << ", " << t.rails << " NICs (rails) per node";
  out << ", " << c.nic_bandwidth_bytes_per_s * 8 / 1e9 << " Gbps per NIC\n";
}

}  // namespace

CLI::App* add_topology_command(CLI::App& app, TopologyArgs& args) {
  CLI::App* topology = app.add_subcommand(
      "topology", "Describe the scenario's cluster topology; --dot: as a Graphviz graph");
  topology->add_option("scenario", args.scenario_path, "Scenario file (TOML)")->required();
  topology->add_flag("--dot", args.dot, "Write the DOT graph on stdout instead of the description");
  topology->add_option("--dot-file", args.dot_path, "Write the DOT graph into FILE");
  return topology;
}

int topology_command(const TopologyArgs& args, std::ostream& out, std::ostream& err) {
  std::optional<Scenario> loaded = load_scenario_argument(args.scenario_path, err);
  if (!loaded) return kExitBadInput;
  const std::string dot = sim::fabric_dot(loaded->cluster, loaded->name);
  if (args.dot) {
    out << dot;
  } else {
    describe(loaded->cluster, out);
  }
  if (args.dot_path.empty()) return kExitOk;
  if (Status st = refuse_overwriting_input(args.dot_path, "--dot-file", args.scenario_path,
                                           "scenario file");
      !st.is_ok()) {
    err << kErrorPrefix << st.message() << "\n";
    return kExitBadInput;
  }
  Result<OutputFile> opened = OutputFile::open(args.dot_path, "--dot-file");
  Status written = opened.is_ok() ? std::move(opened).value().write_and_close(dot) : opened.status();
  if (!written.is_ok()) {
    err << kErrorPrefix << written.message() << "\n";
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace tensorwire::app
