// The parameter-server training workload, generated from a model's variables.
//
// Variables are sharded over the PS ranks. Every step has two phases:
//   "pull": every worker Recvs every variable from the PS rank holding it
//           (the PS Sends); no compute before it;
//   "push": after `compute_ns` of compute, every worker Sends its gradient of
//           every variable to the PS rank holding it (the PS Recvs).
// Rendezvous keys are (name, step_id) per sender, so names carry the worker:
// pull "conv1_1/kernel@w3", push "conv1_1/kernel/grad@w3".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/nic.h"
#include "core/workload/workload.h"
#include "scenario/memory_place.h"
#include "scenario/model_file.h"

namespace tensorwire {

enum class VariablePlacement {
  kRoundRobin,  // variable i (file order) -> ps_ranks[i % n], like replica_device_setter
  kBalanced,    // each variable in file order -> the PS rank with the fewest bytes so far
};

struct ParameterServerOptions {
  uint64_t steps = 1;
  uint64_t first_step_id = 1;  // step k (1-based) gets step_id first_step_id + k - 1
  std::vector<RankId> ps_ranks;
  std::vector<RankId> worker_ranks;
  TimeNs compute_ns = 0;
  VariablePlacement placement = VariablePlacement::kRoundRobin;
  // Where each rank keeps its variables and gradients, indexed by rank.
  std::vector<MemoryPlace> memory_of_rank;
  // When Send and Recv are called after their phase starts.
  TimeNs send_offset_ns = 0;
  TimeNs recv_offset_ns = 0;
  // Steps (1-based) at which variables change meta-data: each listed step
  // toggles the first dimension of the chosen variables between its model
  // value and one more (a scalar toggles between [] and [1]); the change holds
  // until the next listed step. Empty `meta_data_change_variables` = all.
  std::vector<uint64_t> meta_data_change_steps;
  std::vector<std::string> meta_data_change_variables;
};

// The PS rank holding each variable, indexed like model.variables.
std::vector<RankId> place_variables(const Model& model, const std::vector<RankId>& ps_ranks,
                                    VariablePlacement placement);

// Transfers the workload will have (to bound it before building it).
uint64_t parameter_server_transfer_count(const Model& model, const ParameterServerOptions& options);

// The shape variable `v` has at a step, given how many listed change steps have
// passed for it (odd = changed: the first dimension grows by one, or shrinks by
// one when growing would pass `max_elements`, the most one tensor may hold).
TensorShape changed_shape(const TensorShape& model_shape, uint64_t changes_so_far,
                          uint64_t max_elements = UINT64_MAX);

// Builds the workload. Options must be valid (ranks in range, ps and workers
// disjoint and non-empty, memory_of_rank covering every rank); the scenario
// loader checks them first.
Workload make_parameter_server_workload(const Model& model, const ParameterServerOptions& options);

}  // namespace tensorwire
