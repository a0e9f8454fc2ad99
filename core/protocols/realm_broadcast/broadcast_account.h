// The broadcast's account of a run (core/collective.h's CollectiveAccount):
// the summary's broadcast section (what was asked, the plan, each
// destination's done time, the busiest links, the lower bound), its keys in
// the results JSON, and the transfer graph as Graphviz DOT for `plan`.
#pragma once

#include <string>
#include <string_view>

#include "core/collective.h"
#include "core/protocols/realm_broadcast/broadcast_result.h"

namespace tensorwire::collectives {

class BroadcastAccount final : public CollectiveAccount {
 public:
  explicit BroadcastAccount(BroadcastResult result) : result_(std::move(result)) {}

  const BroadcastResult& result() const { return result_; }

  // The plan's pipelined bound against the last destination's done time.
  std::optional<CollectiveTimeBound> time_bound() const override;
  std::string summary_section() const override;
  std::string pass_line(bool payload) const override;
  // Adds "workload", "broadcast", "plan", "destinations", "links",
  // "finish_ns" and "lower_bound".
  void add_results(nlohmann::ordered_json& results, std::string_view workload_kind) const override;
  // Buffers grouped by node, copies as edges labelled with their bytes and
  // when each first became busy.
  std::string graph_dot(std::string_view title) const override;

 private:
  BroadcastResult result_;
};

// The broadcast result inside a run's account; nullptr for another protocol's.
const BroadcastResult* broadcast_result_of(const CollectiveAccount* account);

}  // namespace tensorwire::collectives
