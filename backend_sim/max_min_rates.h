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
  // The resources still rising, in a binary heap indexed by resource (each
  // knows its place), ordered by (level, version, resource): the order of
  // one heap entry per change, with no stale entries to pop.
  bool before(uint32_t a, uint32_t b) const {
    if (level_[a] != level_[b]) return level_[a] < level_[b];
    return (uint64_t{version_[a]} << 32 | a) < (uint64_t{version_[b]} << 32 | b);
  }
  void heap_place(size_t pos, uint32_t resource) {
    heap_[pos] = resource;
    heap_pos_[resource] = static_cast<uint32_t>(pos);
  }
  void sift_up(size_t pos);
  void sift_down(size_t pos);
  void heap_remove(uint32_t resource);

  std::vector<double> capacity_;
  std::vector<uint32_t> flow_begin_{0};  // flow f crosses flow_resources_[begin[f], begin[f+1])
  std::vector<uint32_t> flow_resources_;
  // Scratch of solve().
  std::vector<uint32_t> resource_begin_;  // resource r carries resource_flows_[begin[r], begin[r+1])
  std::vector<uint32_t> resource_flows_;
  std::vector<double> remaining_;   // capacity not yet given to frozen flows
  std::vector<uint32_t> unfrozen_;  // flows on the resource whose rate is still rising
  std::vector<uint32_t> version_;   // heap entries of older versions are stale
  std::vector<uint32_t> touched_version_;  // freeze_at: the version its level was set at
  std::vector<uint32_t> touched_;   // freeze_at: resources whose level it changed
  std::vector<double> level_;       // per resource: remaining / unfrozen when last set
  std::vector<uint32_t> heap_;      // resources still rising
  std::vector<uint32_t> heap_pos_;  // per resource: its place in heap_, or kNotInHeap
  static constexpr uint32_t kNotInHeap = UINT32_MAX;
  std::vector<bool> frozen_;
  size_t rising_flows_ = 0;  // flows not frozen yet
  std::vector<double> rates_;
};

}  // namespace tensorwire::sim
