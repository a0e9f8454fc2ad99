#include "scenario/workload_section.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/assert.h"
#include "scenario/memory_place.h"
#include "scenario/model_file.h"
#include "scenario/parameter_server_workload.h"
#include "scenario/scenario.h"
#include "scenario/scenario_limits.h"
#include "scenario/toml_table_reader.h"

namespace tensorwire {
namespace {

namespace limits = scenario_limits;

// "recv_first": the Recv is called at the phase start and the Send this much
// later, long enough for the TENSOR_REQUEST to arrive first on any sensible
// cluster; "send_first" the other way round.
constexpr TimeNs kOrderGapNs = 5000;
constexpr uint32_t kDefaultStringBytes = 16;
// What one string element costs in memory besides its bytes (std::string), for
// the payload-mode bound.
constexpr uint64_t kStringElementOverheadBytes = 32;

struct Offsets {
  TimeNs send_ns = 0;
  TimeNs recv_ns = 0;
};

Offsets read_offsets(const TomlTableReader& r) {
  std::optional<std::string> order = r.string("order");
  std::optional<TimeNs> send = r.duration("send_offset", limits::kMaxDurationNs);
  std::optional<TimeNs> recv = r.duration("recv_offset", limits::kMaxDurationNs);
  if (order && (send || recv)) {
    r.fail(send ? "send_offset" : "recv_offset",
           "give either order or send_offset/recv_offset, not both");
  }
  if (send || recv) return {send.value_or(0), recv.value_or(0)};
  const std::string o = order.value_or("recv_first");
  if (o == "recv_first") return {kOrderGapNs, 0};
  if (o == "send_first") return {0, kOrderGapNs};
  if (o == "same_time") return {0, 0};
  r.fail("order",
         "unknown order '" + o + "' (use \"recv_first\", \"send_first\" or \"same_time\")");
}

MemoryPlace read_memory(const TomlTableReader& r, std::string_view key,
                        const std::string& default_spec, const Cluster& cluster,
                        RankId node) {
  const std::string spec = r.string(key).value_or(default_spec);
  Result<MemoryPlace> place = resolve_memory_place(spec, cluster, node);
  if (!place) r.fail(key, place.status().message());
  return *place;
}

std::string gib(uint64_t bytes) {
  const double g = static_cast<double>(bytes) / static_cast<double>(1ull << 30);
  std::string s = std::to_string(g);
  return s.substr(0, s.find('.') + 3) + " GiB";
}

// The meta-data a tensor has at one step.
struct TensorState {
  DataType dtype = DataType::kFloat32;
  TensorShape shape;
  bool dead = false;
  uint32_t string_bytes = 0;
};

// "" when the content is within bounds, else why not. `payload_bytes` gets what
// the content costs in memory in payload mode.
std::string check_content(const TensorState& s, uint64_t& payload_bytes) {
  const uint64_t elements = s.shape.num_elements().value_or(0);
  if (s.dtype == DataType::kString) {
    if (elements > limits::kMaxStringElements) {
      return "a string tensor has at most " + std::to_string(limits::kMaxStringElements) +
             " elements, this one " + std::to_string(elements);
    }
    payload_bytes = s.dead ? 0 : elements * (s.string_bytes + kStringElementOverheadBytes);
    // The driver builds string tensors in host memory in either mode.
    if (payload_bytes > limits::kMaxStringTensorBytes) {
      return "a string tensor holds at most " + std::to_string(limits::kMaxStringTensorBytes >> 20) +
             " MiB of strings (the run builds them in memory), this one " +
             std::to_string(payload_bytes >> 20) + " MiB";
    }
    return "";
  }
  if (elements > limits::kMaxTensorBytes / data_type_size(s.dtype)) {
    return "the tensor is larger than 2 GiB (one RDMA write carries at most 2^31 bytes)";
  }
  payload_bytes = s.dead ? 0 : elements * data_type_size(s.dtype);
  return "";
}

struct TensorEntry {
  TomlTableReader reader;
  TensorTransfer transfer;  // meta-data at step 1
};

struct Change {
  TomlTableReader reader;
  size_t tensor = 0;
  uint64_t step = 0;
  std::optional<DataType> dtype;
  std::optional<TensorShape> shape;
  std::optional<bool> dead;
  std::optional<uint32_t> string_bytes;
};

TensorState state_of(const TensorTransfer& t) {
  return {t.dtype, t.shape, t.is_dead, t.string_bytes};
}

void apply_state(const TensorState& s, TensorTransfer& t) {
  t.dtype = s.dtype;
  t.shape = s.shape;
  t.is_dead = s.dead;
  t.string_bytes = s.string_bytes;
}

// String tensors stay on the host, as TensorFlow keeps DT_STRING there.
bool host_only_ok(const TensorTransfer& t) {
  return t.dtype != DataType::kString || (is_host(t.src_kind) && is_host(t.dst_kind));
}
// `shape`, or `bytes`: a one-dimensional tensor of that many bytes, so that a
// size can be written (and swept) with units instead of as element counts.
TensorShape read_shape_or_bytes(const TomlTableReader& r, DataType dtype) {
  const std::optional<uint64_t> bytes = r.bytes("bytes", limits::kMaxTensorBytes);
  if (!bytes) return r.shape("shape").value_or(TensorShape{});
  if (r.has("shape")) r.fail("bytes", "give shape or bytes, not both");
  if (dtype == DataType::kString) {
    r.fail("bytes", "bytes is for fixed-size dtypes (a string tensor's size is its shape times "
                    "string_bytes)");
  }
  const uint64_t element_bytes = data_type_size(dtype);
  TW_ASSERT(element_bytes > 0);
  if (*bytes % element_bytes != 0) {
    r.fail("bytes", std::to_string(*bytes) + " bytes is not a whole number of " +
                        data_type_name(dtype) + " elements (" + std::to_string(element_bytes) +
                        " bytes each)");
  }
  return TensorShape{{static_cast<int64_t>(*bytes / element_bytes)}};
}

constexpr const char* kStringOnHost =
    "string tensors live in host memory (TensorFlow keeps DT_STRING on the host): use "
    "src_memory and dst_memory \"host\" or \"host_pageable\"";

TensorEntry parse_tensor(const toml::table& table, const std::string& path, const std::string& file,
                         const Cluster& cluster) {
  TomlTableReader r(table, path, file,
                    {"name", "src", "dst", "dtype", "shape", "src_memory", "dst_memory", "order",
                     "send_offset", "recv_offset", "dead", "string_bytes", "bytes"});
  TensorTransfer t;
  t.name = r.required(r.string("name"), "name");
  if (t.name.empty() || t.name.size() > limits::kMaxTensorNameBytes) {
    r.fail("name", "a tensor name is 1 to " + std::to_string(limits::kMaxTensorNameBytes) +
                       " bytes (the wire format's name field)");
  }
  const int64_t last_rank = static_cast<int64_t>(cluster.nodes) - 1;
  t.src = static_cast<RankId>(r.required(r.integer("src", 0, last_rank), "src"));
  t.dst = static_cast<RankId>(r.required(r.integer("dst", 0, last_rank), "dst"));
  if (t.src == t.dst) {
    r.fail("dst", "src and dst are both rank " + std::to_string(t.src) +
                      "; a transfer goes between two ranks");
  }
  t.dtype = r.data_type("dtype").value_or(DataType::kFloat32);
  t.shape = read_shape_or_bytes(r, t.dtype);
  t.is_dead = r.boolean("dead").value_or(false);
  std::optional<uint64_t> string_bytes = r.bytes("string_bytes", limits::kMaxStringBytes);
  if (string_bytes && t.dtype != DataType::kString) {
    r.fail("string_bytes", "string_bytes is only for dtype = \"string\"");
  }
  if (t.dtype == DataType::kString) {
    t.string_bytes = static_cast<uint32_t>(string_bytes.value_or(kDefaultStringBytes));
  }
  MemoryPlace src = read_memory(r, "src_memory", "host", cluster, t.src);
  MemoryPlace dst = read_memory(r, "dst_memory", "host", cluster, t.dst);
  t.src_kind = src.kind;
  t.src_device = src.device;
  t.dst_kind = dst.kind;
  t.dst_device = dst.device;
  if (!host_only_ok(t)) r.fail(is_host(t.src_kind) ? "dst_memory" : "src_memory", kStringOnHost);
  Offsets offsets = read_offsets(r);
  t.send_offset_ns = offsets.send_ns;
  t.recv_offset_ns = offsets.recv_ns;
  uint64_t payload_bytes = 0;
  if (std::string why = check_content(state_of(t), payload_bytes); !why.empty()) {
    r.fail("shape", why);
  }
  return {r, std::move(t)};
}

Change parse_change(const toml::table& table, const std::string& path, const std::string& file,
                    uint64_t steps, const std::map<std::string, size_t>& tensor_index) {
  TomlTableReader r(table, path, file,
                    {"step", "tensor", "shape", "dtype", "dead", "string_bytes"});
  Change c{r, 0, 0, {}, {}, {}, {}};
  const std::string name = r.required(r.string("tensor"), "tensor");
  auto it = tensor_index.find(name);
  if (it == tensor_index.end()) {
    r.fail("tensor", "no [[workload.tensor]] is named '" + name + "'");
  }
  c.tensor = it->second;
  if (steps < 2) {
    r.fail("step", "the workload has a single step; a change needs a step 2 or later");
  }
  c.step =
      static_cast<uint64_t>(r.required(r.integer("step", 2, static_cast<int64_t>(steps)), "step"));
  c.shape = r.shape("shape");
  c.dtype = r.data_type("dtype");
  c.dead = r.boolean("dead");
  if (std::optional<uint64_t> sb = r.bytes("string_bytes", limits::kMaxStringBytes)) {
    c.string_bytes = static_cast<uint32_t>(*sb);
  }
  if (!c.shape && !c.dtype && !c.dead && !c.string_bytes) {
    r.fail_table("a change sets at least one of shape, dtype, dead, string_bytes");
  }
  return c;
}

// Applies `c` to `s`, or throws at the change's key that made it invalid.
void apply_change(const Change& c, const TensorTransfer& t, TensorState& s) {
  const DataType before = s.dtype;
  if (c.dtype) s.dtype = *c.dtype;
  if (c.shape) s.shape = *c.shape;
  if (c.dead) s.dead = *c.dead;
  if (s.dtype == DataType::kString) {
    if (c.string_bytes) {
      s.string_bytes = *c.string_bytes;
    } else if (before != DataType::kString) {
      s.string_bytes = kDefaultStringBytes;
    }
    if (!is_host(t.src_kind) || !is_host(t.dst_kind)) c.reader.fail("dtype", kStringOnHost);
  } else {
    if (c.string_bytes) {
      c.reader.fail("string_bytes", "string_bytes is only for dtype = \"string\" (tensor '" +
                                        t.name + "' is " + data_type_name(s.dtype) + " here)");
    }
    s.string_bytes = 0;
  }
  uint64_t payload_bytes = 0;
  if (std::string why = check_content(s, payload_bytes); !why.empty()) {
    c.reader.fail(c.shape ? "shape" : "dtype", why);
  }
}

// Payload mode holds real bytes: bound what one step moves (each transfer's
// content, strings with their per-element overhead).
void check_payload_steps(const TomlTableReader& w, bool payload, const Workload& workload) {
  if (!payload) return;
  for (const WorkloadStep& step : workload.steps) {
    uint64_t step_bytes = 0;
    for (const WorkloadPhase& phase : step.phases) {
      for (const TensorTransfer& t : phase.transfers) {
        uint64_t bytes = 0;
        (void)check_content({t.dtype, t.shape, t.is_dead, t.string_bytes}, bytes);
        step_bytes += bytes;
      }
    }
    if (step_bytes > limits::kMaxPayloadStepBytes) {
      w.fail_table("step " + std::to_string(step.step_id) + " moves " + gib(step_bytes) +
                   "; payload mode holds real bytes and allows at most " +
                   gib(limits::kMaxPayloadStepBytes) +
                   " per step: set [run] mode = \"timing\" for a workload this large");
    }
  }
}

Workload parse_tensors(const TomlTableReader& w, const Cluster& cluster,
                       bool payload) {
  const auto steps =
      static_cast<uint64_t>(w.required(w.integer("steps", 1, limits::kMaxSteps), "steps"));
  const TimeNs compute_ns = w.duration("compute", limits::kMaxDurationNs).value_or(0);
  const toml::array* list = w.array_of_tables("tensor");
  if (list == nullptr || list->empty()) {
    w.fail_table("a \"tensors\" workload needs at least one [[workload.tensor]]");
  }
  if (list->size() * steps > limits::kMaxTransfers) {
    w.fail("steps", std::to_string(steps) + " steps of " + std::to_string(list->size()) +
                        " tensors exceed " + std::to_string(limits::kMaxTransfers) +
                        " transfers in all");
  }
  std::vector<TensorEntry> tensors;
  std::map<std::string, size_t> tensor_index;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string path = indexed_path(w.key_path("tensor"), i);
    TensorEntry e = parse_tensor(*list->get(i)->as_table(), path, w.file(), cluster);
    if (!tensor_index.emplace(e.transfer.name, i).second) {
      e.reader.fail("name", "tensor '" + e.transfer.name + "' is already defined by " +
                                indexed_path(w.key_path("tensor"), tensor_index[e.transfer.name]));
    }
    tensors.push_back(std::move(e));
  }

  std::vector<Change> changes;
  std::map<uint64_t, std::vector<size_t>> changes_at_step;
  std::set<std::pair<size_t, uint64_t>> changed;
  if (const toml::array* change_list = w.array_of_tables("change")) {
    for (size_t i = 0; i < change_list->size(); ++i) {
      const std::string path = indexed_path(w.key_path("change"), i);
      Change c =
          parse_change(*change_list->get(i)->as_table(), path, w.file(), steps, tensor_index);
      if (!changed.emplace(c.tensor, c.step).second) {
        c.reader.fail("step", "tensor '" + tensors[c.tensor].transfer.name +
                                  "' already has a change at step " + std::to_string(c.step) +
                                  "; put both in one [[workload.change]]");
      }
      changes_at_step[c.step].push_back(changes.size());
      changes.push_back(std::move(c));
    }
  }

  Workload workload;
  workload.kind = "tensors";
  std::vector<TensorState> state;
  for (const auto& e : tensors) state.push_back(state_of(e.transfer));
  for (uint64_t step = 1; step <= steps; ++step) {
    if (auto it = changes_at_step.find(step); it != changes_at_step.end()) {
      for (size_t ci : it->second) {
        const Change& c = changes[ci];
        apply_change(c, tensors[c.tensor].transfer, state[c.tensor]);
      }
    }
    WorkloadStep ws;
    ws.step_id = step;
    WorkloadPhase phase;
    phase.label = "tensors";
    phase.compute_before_ns = compute_ns;
    for (size_t i = 0; i < tensors.size(); ++i) {
      TensorTransfer t = tensors[i].transfer;
      apply_state(state[i], t);
      phase.transfers.push_back(std::move(t));
    }
    ws.phases.push_back(std::move(phase));
    workload.steps.push_back(std::move(ws));
  }
  check_payload_steps(w, payload, workload);
  return workload;
}

Model load_model(const TomlTableReader& w, const std::string& scenario_dir) {
  const std::string model = w.required(w.string("model"), "model");
  if (model.empty()) w.fail("model", "empty model name");
  const std::vector<std::string> candidates = model_file_candidates(model, scenario_dir);
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return load_model_file(path);
  }
  std::string tried;
  for (const std::string& path : candidates) tried += (tried.empty() ? "" : ", ") + path;
  w.fail("model", "model file for '" + model + "' not found (tried " + tried + ")");
}

// ps_ranks, and worker_ranks (by default every rank that is not a PS).
void read_ps_and_worker_ranks(const TomlTableReader& w, const Cluster& cluster,
                              ParameterServerOptions& o) {
  o.ps_ranks = w.required(w.rank_list("ps_ranks", cluster.nodes), "ps_ranks");
  if (o.ps_ranks.empty()) w.fail("ps_ranks", "at least one rank holds the variables");
  if (std::optional<std::vector<RankId>> workers = w.rank_list("worker_ranks", cluster.nodes)) {
    for (RankId rank : *workers) {
      if (std::find(o.ps_ranks.begin(), o.ps_ranks.end(), rank) != o.ps_ranks.end()) {
        w.fail("worker_ranks",
               "rank " + std::to_string(rank) + " is in ps_ranks too; a rank is a PS or a worker");
      }
    }
    o.worker_ranks = std::move(*workers);
  } else {
    for (RankId rank = 0; rank < cluster.nodes; ++rank) {
      if (std::find(o.ps_ranks.begin(), o.ps_ranks.end(), rank) == o.ps_ranks.end()) {
        o.worker_ranks.push_back(rank);
      }
    }
  }
  if (o.worker_ranks.empty()) {
    w.fail(w.has("worker_ranks") ? "worker_ranks" : "ps_ranks", "no rank is left to be a worker");
  }
}

VariablePlacement read_placement(const TomlTableReader& w) {
  const std::string placement = w.string("placement").value_or("round_robin");
  if (placement == "round_robin") return VariablePlacement::kRoundRobin;
  if (placement == "balanced") return VariablePlacement::kBalanced;
  w.fail("placement",
         "unknown placement '" + placement + "' (use \"round_robin\" or \"balanced\")");
}

// meta_data_change_steps: distinct steps from 2 to the workload's last.
std::vector<uint64_t> read_meta_data_change_steps(const TomlTableReader& w, uint64_t steps) {
  std::vector<uint64_t> change_steps;
  const toml::array* list = w.array("meta_data_change_steps");
  if (list == nullptr) return change_steps;
  std::set<uint64_t> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    const toml::node& node = *list->get(i);
    const std::string path = indexed_path(w.key_path("meta_data_change_steps"), i);
    if (steps < 2) {
      throw_scenario_error(w.file(), node.source(), path,
                           "the workload has a single step; a change needs a step 2 or later");
    }
    auto step = static_cast<uint64_t>(
        toml_integer(w.file(), node, path, 2, static_cast<int64_t>(steps)));
    if (!seen.insert(step).second) {
      throw_scenario_error(w.file(), node.source(), path,
                           "step " + std::to_string(step) + " is listed twice");
    }
    change_steps.push_back(step);
  }
  return change_steps;
}

// meta_data_change_variables: distinct variables of the model.
std::vector<std::string> read_meta_data_change_variables(const TomlTableReader& w,
                                                         const Model& model) {
  std::vector<std::string> variables;
  const toml::array* list = w.array("meta_data_change_variables");
  if (list == nullptr) return variables;
  std::set<std::string> known;
  for (const auto& v : model.variables) known.insert(v.name);
  std::set<std::string> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    const toml::node& node = *list->get(i);
    const std::string path = indexed_path(w.key_path("meta_data_change_variables"), i);
    std::string name = toml_string(w.file(), node, path);
    if (known.count(name) == 0) {
      throw_scenario_error(w.file(), node.source(), path,
                           "model '" + model.name + "' has no variable '" + name + "'");
    }
    if (!seen.insert(name).second) {
      throw_scenario_error(w.file(), node.source(), path, "'" + name + "' is listed twice");
    }
    variables.push_back(std::move(name));
  }
  return variables;
}

Workload parse_parameter_server(const TomlTableReader& w, const Cluster& cluster,
                                bool payload, const std::string& scenario_dir) {
  ParameterServerOptions o;
  o.steps = static_cast<uint64_t>(w.required(w.integer("steps", 1, limits::kMaxSteps), "steps"));
  read_ps_and_worker_ranks(w, cluster, o);
  o.compute_ns = w.duration("compute", limits::kMaxDurationNs).value_or(0);
  o.placement = read_placement(w);
  o.memory_of_rank.assign(cluster.nodes, MemoryPlace{});
  const std::string worker_default = cluster.gpus_per_node > 0 ? "gpu0" : "host";
  for (RankId rank : o.worker_ranks) {
    o.memory_of_rank[rank] = read_memory(w, "worker_memory", worker_default, cluster, rank);
  }
  for (RankId rank : o.ps_ranks) {
    o.memory_of_rank[rank] = read_memory(w, "ps_memory", "host", cluster, rank);
  }
  Offsets offsets = read_offsets(w);
  o.send_offset_ns = offsets.send_ns;
  o.recv_offset_ns = offsets.recv_ns;
  o.meta_data_change_steps = read_meta_data_change_steps(w, o.steps);

  // The model last: its errors point into another file, and everything in
  // this table is checked by then.
  const Model model = load_model(w, scenario_dir);
  o.meta_data_change_variables = read_meta_data_change_variables(w, model);
  const uint64_t transfers = parameter_server_transfer_count(model, o);
  if (transfers > limits::kMaxTransfers) {
    w.fail("steps", std::to_string(o.steps) + " steps of " +
                        std::to_string(model.variables.size()) + " variables x " +
                        std::to_string(o.worker_ranks.size()) + " workers x 2 phases exceed " +
                        std::to_string(limits::kMaxTransfers) + " transfers in all");
  }
  Workload workload = make_parameter_server_workload(model, o);
  check_payload_steps(w, payload, workload);
  return workload;
}

}  // namespace

Workload parse_workload_section(const toml::table& table, const std::string& file,
                                const Cluster& cluster, bool payload,
                                const std::string& scenario_dir) {
  const std::string path = "workload";
  const toml::node* kind_node = table.get("kind");
  if (kind_node == nullptr) {
    throw_scenario_error(file, table.source(), "workload.kind",
                         "missing required key in [workload] (" + registered_workload_kinds() +
                             ")");
  }
  const std::string kind = toml_string(file, *kind_node, "workload.kind");
  if (kind == "tensors") {
    TomlTableReader w(table, path, file, {"kind", "steps", "compute", "tensor", "change"});
    return parse_tensors(w, cluster, payload);
  }
  if (kind == "parameter_server") {
    TomlTableReader w(table, path, file,
                      {"kind", "model", "steps", "ps_ranks", "worker_ranks", "compute", "placement",
                       "worker_memory", "ps_memory", "order", "send_offset", "recv_offset",
                       "meta_data_change_steps", "meta_data_change_variables"});
    return parse_parameter_server(w, cluster, payload, scenario_dir);
  }
  throw_scenario_error(
      file, kind_node->source(), "workload.kind",
      "unknown workload kind '" + kind + "' (use " + registered_workload_kinds() + ")");
}

}  // namespace tensorwire
