#include "scenario/parameter_server_workload.h"

#include <algorithm>
#include <optional>
#include <set>

#include "scenario/scenario_limits.h"

namespace tensorwire {

std::vector<RankId> place_variables(const Model& model, const std::vector<RankId>& ps_ranks,
                                    VariablePlacement placement) {
  std::vector<RankId> owner(model.variables.size(), 0);
  if (ps_ranks.empty()) return owner;
  std::vector<uint64_t> load(ps_ranks.size(), 0);
  for (size_t i = 0; i < model.variables.size(); ++i) {
    size_t shard = i % ps_ranks.size();
    if (placement == VariablePlacement::kBalanced) {
      // First of the least loaded: ties go to the earlier PS rank.
      shard = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    }
    load[shard] += model.variables[i].bytes();
    owner[i] = ps_ranks[shard];
  }
  return owner;
}

uint64_t parameter_server_transfer_count(const Model& model,
                                         const ParameterServerOptions& options) {
  // Each factor is bounded by the loader (steps <= 1e5, variables <= 1e5,
  // workers <= 1024), so the product fits in 64 bits.
  return options.steps * 2 * options.worker_ranks.size() * model.variables.size();
}

TensorShape changed_shape(const TensorShape& model_shape, uint64_t changes_so_far,
                          uint64_t max_elements) {
  if (changes_so_far % 2 == 0) return model_shape;
  TensorShape shape = model_shape;
  if (shape.dims.empty()) {
    shape.dims.push_back(1);
    return shape;
  }
  shape.dims[0] += 1;
  const std::optional<uint64_t> grown = shape.num_elements();
  if ((!grown || *grown > max_elements) && model_shape.dims[0] > 1) {
    shape.dims[0] = model_shape.dims[0] - 1;
  }
  return shape;
}

Workload make_parameter_server_workload(const Model& model, const ParameterServerOptions& options) {
  Workload workload;
  workload.kind = "parameter_server";
  const std::vector<RankId> owner = place_variables(model, options.ps_ranks, options.placement);
  const std::set<std::string> chosen(options.meta_data_change_variables.begin(),
                                     options.meta_data_change_variables.end());
  auto memory_of = [&](RankId rank) {
    return rank < options.memory_of_rank.size() ? options.memory_of_rank[rank] : MemoryPlace{};
  };
  const std::set<uint64_t> change_steps(options.meta_data_change_steps.begin(),
                                        options.meta_data_change_steps.end());
  std::vector<uint64_t> changes(model.variables.size(), 0);
  for (uint64_t step = 1; step <= options.steps; ++step) {
    const bool change_step = change_steps.count(step) > 0;
    for (size_t v = 0; v < model.variables.size(); ++v) {
      if (change_step && (chosen.empty() || chosen.count(model.variables[v].name) > 0)) {
        ++changes[v];
      }
    }
    WorkloadStep ws;
    ws.step_id = options.first_step_id + step - 1;
    WorkloadPhase pull;
    pull.label = "pull";
    pull.compute_before_ns = 0;
    WorkloadPhase push;
    push.label = "push";
    push.compute_before_ns = options.compute_ns;
    for (size_t v = 0; v < model.variables.size(); ++v) {
      const ModelVariable& var = model.variables[v];
      const RankId ps = owner[v];
      const TensorShape shape = changed_shape(var.shape, changes[v],
                                              scenario_limits::kMaxTensorBytes /
                                                  data_type_size(var.dtype));
      for (RankId worker : options.worker_ranks) {
        const std::string suffix = "@w" + std::to_string(worker);
        TensorTransfer t;
        t.dtype = var.dtype;
        t.shape = shape;
        t.send_offset_ns = options.send_offset_ns;
        t.recv_offset_ns = options.recv_offset_ns;

        t.name = var.name + suffix;
        t.src = ps;
        t.dst = worker;
        t.src_kind = memory_of(ps).kind;
        t.src_device = memory_of(ps).device;
        t.dst_kind = memory_of(worker).kind;
        t.dst_device = memory_of(worker).device;
        pull.transfers.push_back(t);

        t.name = var.name + "/grad" + suffix;
        t.src = worker;
        t.dst = ps;
        t.src_kind = memory_of(worker).kind;
        t.src_device = memory_of(worker).device;
        t.dst_kind = memory_of(ps).kind;
        t.dst_device = memory_of(ps).device;
        push.transfers.push_back(std::move(t));
      }
    }
    ws.phases.push_back(std::move(pull));
    ws.phases.push_back(std::move(push));
    workload.steps.push_back(std::move(ws));
  }
  return workload;
}

}  // namespace tensorwire
