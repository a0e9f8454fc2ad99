#include "core/workload/peer_sets.h"

#include <algorithm>
#include <string>

#include "core/assert.h"

namespace tensorwire {

Result<std::vector<std::vector<RankId>>> peer_sets_of(const Workload& workload, uint32_t ranks) {
  std::vector<std::vector<RankId>> peers(ranks);
  for (const WorkloadStep& step : workload.steps) {
    for (const WorkloadPhase& phase : step.phases) {
      for (const TensorTransfer& t : phase.transfers) {
        if (t.src >= ranks || t.dst >= ranks) {
          return Status(StatusCode::kInvalidArgument,
                        "workload step " + std::to_string(step.step_id) + ", tensor '" + t.name +
                            "': rank " + std::to_string(std::max(t.src, t.dst)) +
                            " is outside the cluster's " + std::to_string(ranks) + " ranks");
        }
        if (t.src == t.dst) continue;  // a rank needs no channel to itself
        peers[t.src].push_back(t.dst);
        peers[t.dst].push_back(t.src);
      }
    }
  }
  // Sorted, so a protocol that sets up its peers in this order does so in the
  // same order on every run, whatever the order of the transfers.
  for (std::vector<RankId>& p : peers) {
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
  }
  TW_ASSERT(peers.size() == ranks);
  return peers;
}

}  // namespace tensorwire
