#include "scenario/scenario_loader.h"

#include <filesystem>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "core/assert.h"
#include "scenario/jitter_section.h"
#include "scenario/topology_keys.h"
#include "scenario/protocol_section.h"
#include "scenario/scenario_include.h"
#include "scenario/scenario_limits.h"
#include "scenario/text_file.h"
#include "scenario/toml_option_reader.h"
#include "scenario/toml_table_reader.h"
#include "scenario/workload_section.h"

#ifndef TENSORWIRE_SOURCE_ROOT
#error "scenario/meson.build passes -DTENSORWIRE_SOURCE_ROOT"
#endif

namespace tensorwire {
namespace {

namespace limits = scenario_limits;

bool read_payload_mode(const TomlTableReader& top) {
  const toml::table* run = top.sub_table("run");
  if (run == nullptr) return true;
  TomlTableReader r(*run, "run", top.file(), {"mode"});
  const std::string mode = r.string("mode").value_or("payload");
  if (mode == "payload") return true;
  if (mode == "timing") return false;
  r.fail("mode", "unknown mode '" + mode + "' (use \"payload\" or \"timing\")");
}

// gpu_direct = true | false | [entry per node], where a node's entry is a
// boolean (all its GPUs) or an array of one boolean per GPU.
std::vector<std::vector<bool>> read_gpu_direct(const TomlTableReader& r, uint32_t nodes,
                                               uint32_t gpus) {
  const toml::node* node = r.get("gpu_direct");
  if (node == nullptr) return {};
  if (const auto* all = node->as_boolean()) {
    if (all->get()) return {};  // Cluster: empty = every GPU
    return std::vector<std::vector<bool>>(nodes, std::vector<bool>(gpus, false));
  }
  const toml::array* per_node = node->as_array();
  if (per_node == nullptr) {
    r.fail("gpu_direct", std::string("expected true, false, or an array with an entry per node, "
                                     "found ") +
                             toml_type_name(*node));
  }
  if (per_node->size() != nodes) {
    r.fail("gpu_direct", "has " + std::to_string(per_node->size()) + " entries; the cluster has " +
                             std::to_string(nodes) + " nodes");
  }
  std::vector<std::vector<bool>> table;
  for (size_t n = 0; n < per_node->size(); ++n) {
    const toml::node& entry = *per_node->get(n);
    const std::string path = indexed_path(r.key_path("gpu_direct"), n);
    if (const auto* whole = entry.as_boolean()) {
      table.emplace_back(gpus, whole->get());
      continue;
    }
    const toml::array* per_gpu = entry.as_array();
    if (per_gpu == nullptr) {
      throw_scenario_error(r.file(), entry.source(), path,
                           std::string("expected a boolean or an array of one boolean per GPU, "
                                       "found ") +
                               toml_type_name(entry));
    }
    if (per_gpu->size() != gpus) {
      throw_scenario_error(r.file(), entry.source(), path,
                           "has " + std::to_string(per_gpu->size()) + " entries; nodes have " +
                               std::to_string(gpus) + " GPUs");
    }
    std::vector<bool> row;
    for (size_t g = 0; g < per_gpu->size(); ++g) {
      row.push_back(toml_boolean(r.file(), *per_gpu->get(g), indexed_path(path, g)));
    }
    table.push_back(std::move(row));
  }
  return table;
}

Cluster read_cluster(const TomlTableReader& top) {
  Cluster c;
  const toml::table* table = top.sub_table("cluster");
  if (table == nullptr) return c;
  std::vector<std::string_view> keys = {
      "nodes", "gpus_per_node", "gpu_direct", "nic_bandwidth", "nic_latency",
      "pcie_bandwidth", "pcie_latency", "nvlink_bandwidth", "nvlink_latency",
      "host_memcpy_bandwidth", "registration_base",
      "registration_per_page", "send_queue_depth", "rnr_delay", "rnr_retry_count", "jitter"};
  keys.insert(keys.end(), std::begin(kTopologyKeys), std::end(kTopologyKeys));
  TomlTableReader r(*table, "cluster", top.file(), keys);
  c.nodes = static_cast<uint32_t>(
      r.integer("nodes", limits::kMinNodes, limits::kMaxNodes).value_or(c.nodes));
  c.gpus_per_node = static_cast<uint32_t>(
      r.integer("gpus_per_node", 0, limits::kMaxGpusPerNode).value_or(c.gpus_per_node));
  c.gpu_direct = read_gpu_direct(r, c.nodes, c.gpus_per_node);
  c.nic_bandwidth_bytes_per_s = r.bandwidth("nic_bandwidth").value_or(c.nic_bandwidth_bytes_per_s);
  c.nic_latency_ns = r.duration("nic_latency", limits::kMaxDurationNs).value_or(c.nic_latency_ns);
  c.pcie_bandwidth_bytes_per_s =
      r.bandwidth("pcie_bandwidth").value_or(c.pcie_bandwidth_bytes_per_s);
  c.pcie_latency_ns =
      r.duration("pcie_latency", limits::kMaxDurationNs).value_or(c.pcie_latency_ns);
  // No nvlink_bandwidth: GPUs of a node have no NVLink between them.
  c.nvlink_bandwidth_bytes_per_s = r.bandwidth("nvlink_bandwidth").value_or(0);
  c.nvlink_latency_ns =
      r.duration("nvlink_latency", limits::kMaxDurationNs).value_or(c.nvlink_latency_ns);
  c.host_memcpy_bandwidth_bytes_per_s =
      r.bandwidth("host_memcpy_bandwidth").value_or(c.host_memcpy_bandwidth_bytes_per_s);
  c.registration_base_ns =
      r.duration("registration_base", limits::kMaxDurationNs).value_or(c.registration_base_ns);
  c.registration_per_page_ns = r.duration("registration_per_page", limits::kMaxDurationNs)
                                   .value_or(c.registration_per_page_ns);
  c.send_queue_depth = static_cast<uint32_t>(
      r.integer("send_queue_depth", 1, limits::kMaxSendQueueDepth).value_or(c.send_queue_depth));
  c.rnr_delay_ns = r.duration("rnr_delay", limits::kMaxDurationNs).value_or(c.rnr_delay_ns);
  c.rnr_retry_count = static_cast<uint32_t>(
      r.integer("rnr_retry_count", 0, limits::kMaxRnrRetryCount).value_or(c.rnr_retry_count));
  c.jitter = read_jitter_section(r);
  c.topology = read_topology_keys(r, c.nodes, c.gpus_per_node);
  return c;
}

// The [workload] kind, or "" when it is missing or not a string (the
// workload's parser says what is wrong with it).
std::string workload_kind_of(const toml::table& workload) {
  const toml::node* kind = workload.get("kind");
  if (kind == nullptr) return "";
  return kind->value<std::string>().value_or("");
}

// A collective protocol reads its own [workload] table (beside "kind").
std::any read_collective_workload(const CollectiveProtocol& protocol, const toml::table& workload,
                                  const std::string& file, const Scenario& s) {
  std::vector<std::string_view> keys = {"kind"};
  for (std::string_view key : protocol.workload_keys()) keys.push_back(key);
  const TomlTableReader table(workload, "workload", file, keys);
  const CollectiveWorkloadLimits payload_limits{s.payload, limits::kMaxPayloadStepBytes};
  std::any read = protocol.read_workload(TomlOptionReader(table), s.cluster, payload_limits);
  TW_ASSERT(read.has_value());
  return read;
}

}  // namespace

Scenario load_scenario_string(std::string_view text, const std::string& source_name,
                              const std::string& base_dir,
                              std::span<const ScenarioOverride> overrides) {
  const std::string& file = source_name;
  toml::table root = parse_toml_document(text, file);
  merge_includes(root, file, base_dir);
  apply_scenario_overrides(root, overrides);
  TomlTableReader top(root, "", file,
                      {"name", "description", "seed", "run", "cluster", "protocol", "workload"});
  Scenario s;
  s.source_path = source_name;
  s.name = top.string("name").value_or(std::filesystem::path(source_name).stem().string());
  if (s.name.empty() || s.name.size() > limits::kMaxNameBytes) {
    top.fail("name", "a scenario name is 1 to 1024 bytes");
  }
  s.description = top.string("description").value_or("");
  s.seed = static_cast<uint64_t>(
      top.integer("seed", 0, std::numeric_limits<int64_t>::max()).value_or(1));
  s.payload = read_payload_mode(top);
  s.cluster = read_cluster(top);
  const toml::table* workload = top.sub_table("workload");
  if (workload == nullptr) top.fail_missing("workload");
  const std::string kind = workload_kind_of(*workload);
  if (default_protocol_for(kind) == nullptr) {
    // No protocol runs it: the workload's parser names what is wrong.
    parse_workload_section(*workload, file, s.cluster, s.payload, base_dir);
    top.fail("workload", "no protocol runs workload kind '" + kind + "'");
  }
  s.protocol = parse_protocol_section(top, kind);
  if (const CollectiveProtocol* collective = s.protocol.descriptor().collective()) {
    s.workload.kind = kind;
    s.collective_workload = read_collective_workload(*collective, *workload, file, s);
    return s;
  }
  s.workload = parse_workload_section(*workload, file, s.cluster, s.payload, base_dir);
  return s;
}

Scenario load_scenario_file(const std::string& path,
                            std::span<const ScenarioOverride> overrides) {
  Result<std::string> text = read_text_file(path);
  if (!text) throw ScenarioError(path + ": " + text.status().message());
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return load_scenario_string(*text, path, dir, overrides);
}

std::string default_scenario_path() {
  return std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/quickstart.toml";
}

}  // namespace tensorwire
