// Max-min fair rates by progressive filling: every flow's rate rises together
// until a resource on its path saturates, which fixes the rates of all its
// flows at its share; the others keep rising over what is left. The result:
// no resource is over its capacity, and every flow crosses a saturated
// resource on which no flow has a higher rate (its bottleneck).
//
// Scratch buffers are kept between solves: the ports solve once per flow
// start or end, and a solve allocates nothing once they have grown.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tensorwire::sim {

class MaxMinRates {
 public:
  void clear();
  // Returns the resource's index (0, 1, ...).
  uint32_t add_resource(double capacity_bytes_per_s);
  // A flow crossing `resources` (indices from add_resource); returns its index.
  uint32_t add_flow(std::span<const uint32_t> resources);
  // Every flow's rate, by flow index.
  const std::vector<double>& solve();

 private:
  void freeze_at(uint32_t resource, double level);

  std::vector<double> capacity_;
  std::vector<uint32_t> flow_begin_{0};  // flow f crosses flow_resources_[begin[f], begin[f+1])
  std::vector<uint32_t> flow_resources_;
  // Scratch of solve().
  std::vector<uint32_t> resource_begin_;  // resource r carries resource_flows_[begin[r], begin[r+1])
  std::vector<uint32_t> resource_flows_;
  std::vector<double> remaining_;   // capacity not yet given to frozen flows
  std::vector<uint32_t> unfrozen_;  // flows on the resource whose rate is still rising
  std::vector<uint32_t> version_;   // heap entries of older versions are stale
  std::vector<uint32_t> touched_version_;  // freeze_at: the version its last push had
  std::vector<uint32_t> touched_;   // freeze_at: resources whose level it changed
  std::vector<std::pair<double, uint64_t>> heap_;  // (level, version << 32 | resource)
  std::vector<bool> frozen_;
  std::vector<double> rates_;
};

}  // namespace tensorwire::sim
