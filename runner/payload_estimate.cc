#include "runner/payload_estimate.h"

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

namespace tensorwire {
namespace {

// A tensor's bytes as the harness allocates them (a string tensor: about its
// serialized size).
uint64_t tensor_bytes(const TensorTransfer& t) {
  if (t.is_dead) return 0;
  const uint64_t elements = t.shape.num_elements().value_or(0);
  if (t.dtype == DataType::kString) return elements * (uint64_t{t.string_bytes} + 8);
  return elements * data_type_size(t.dtype);
}

uint64_t point_to_point_bytes(const Scenario& scenario) {
  const ProtocolDescriptor& protocol = scenario.protocol.descriptor();
  // The workload driver keeps one source buffer per (rank, name, memory,
  // size) for the whole run.
  std::set<std::tuple<RankId, std::string, MemoryKind, uint32_t, uint64_t>> sources;
  uint64_t sources_bytes = 0;
  uint64_t largest_step_bytes = 0;
  for (const WorkloadStep& step : scenario.workload.steps) {
    uint64_t step_bytes = 0;
    for (const WorkloadPhase& phase : step.phases) {
      for (const TensorTransfer& t : phase.transfers) {
        const uint64_t bytes = tensor_bytes(t);
        if (sources.emplace(t.src, t.name, t.src_kind, t.src_device, bytes).second) {
          sources_bytes += bytes;
        }
        step_bytes += bytes + protocol.transfer_buffer_bytes(scenario.protocol.options, t);
      }
    }
    largest_step_bytes = std::max(largest_step_bytes, step_bytes);
  }
  return sources_bytes + largest_step_bytes;
}

}  // namespace

uint64_t payload_bytes_estimate(const Scenario& scenario) {
  const ProtocolDescriptor& protocol = scenario.protocol.descriptor();
  if (const CollectiveProtocol* collective = protocol.collective(); collective != nullptr) {
    return collective->payload_bytes(scenario.collective_workload, scenario.cluster);
  }
  return point_to_point_bytes(scenario);
}

}  // namespace tensorwire
