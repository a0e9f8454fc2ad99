#include "backend_sim/max_min_rates.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/assert.h"

namespace tensorwire::sim {

namespace {

// Two levels this close are one level computed along two paths (c/3 against
// (c - c/3) / 2): taking them as equal keeps equal shares bit-identical.
bool same_level(double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(a, b); }

}  // namespace

void MaxMinRates::clear() {
  capacity_.clear();
  flow_begin_.assign(1, 0);
  flow_resources_.clear();
}

uint32_t MaxMinRates::add_resource(double capacity_bytes_per_s) {
  TW_ASSERT_HOT_MSG(capacity_bytes_per_s > 0, "a resource's capacity is positive");
  capacity_.push_back(capacity_bytes_per_s);
  return static_cast<uint32_t>(capacity_.size() - 1);
}

uint32_t MaxMinRates::add_flow(std::span<const uint32_t> resources) {
  TW_ASSERT_HOT_MSG(!resources.empty(), "a flow crosses at least one resource");
  for (uint32_t r : resources) {
    TW_ASSERT_HOT(r < capacity_.size());
    flow_resources_.push_back(r);
  }
  flow_begin_.push_back(static_cast<uint32_t>(flow_resources_.size()));
  return static_cast<uint32_t>(flow_begin_.size() - 2);
}

void MaxMinRates::sift_up(size_t pos) {
  const uint32_t r = heap_[pos];
  while (pos > 0) {
    const size_t parent = (pos - 1) / 2;
    if (!before(r, heap_[parent])) break;
    heap_place(pos, heap_[parent]);
    pos = parent;
  }
  heap_place(pos, r);
}

void MaxMinRates::sift_down(size_t pos) {
  const uint32_t r = heap_[pos];
  const size_t n = heap_.size();
  for (;;) {
    size_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
    if (!before(heap_[child], r)) break;
    heap_place(pos, heap_[child]);
    pos = child;
  }
  heap_place(pos, r);
}

void MaxMinRates::heap_remove(uint32_t resource) {
  const uint32_t pos = heap_pos_[resource];
  TW_ASSERT_HOT(pos != kNotInHeap && heap_[pos] == resource);
  heap_pos_[resource] = kNotInHeap;
  const uint32_t last = heap_.back();
  heap_.pop_back();
  if (pos == heap_.size()) return;
  heap_place(pos, last);
  sift_up(pos);
  sift_down(heap_pos_[last]);
}

// Fixes every still-rising flow on `resource` at `level`, taking its rate off
// every other resource it crosses, whose level then rises. Each such resource
// gets its new level once every flow here is frozen, and its place in the
// heap follows; its version still counts every change, so the order of equal
// levels is what one heap entry per change gave.
void MaxMinRates::freeze_at(uint32_t resource, double level) {
  touched_.clear();
  for (uint32_t i = resource_begin_[resource]; i < resource_begin_[resource + 1]; ++i) {
    const uint32_t f = resource_flows_[i];
    if (frozen_[f]) continue;
    frozen_[f] = true;
    rates_[f] = level;
    --rising_flows_;
    for (uint32_t j = flow_begin_[f]; j < flow_begin_[f + 1]; ++j) {
      const uint32_t q = flow_resources_[j];
      remaining_[q] = std::max(0.0, remaining_[q] - level);
      --unfrozen_[q];
      if (q == resource) continue;
      if (touched_version_[q] == version_[q]) touched_.push_back(q);  // first change here
      ++version_[q];
    }
  }
  if (rising_flows_ == 0) {
    // Every rate is fixed: what the heap holds would only be taken out again
    // (at a parameter server's incast, one saturated side fixes every flow
    // and the other side of each flow left the heap one sift at a time).
    heap_.clear();
    return;
  }
  for (uint32_t q : touched_) {
    touched_version_[q] = version_[q];
    if (unfrozen_[q] == 0) {
      heap_remove(q);
      continue;
    }
    // Freezing at the lowest level leaves every other level as high or higher.
    level_[q] = remaining_[q] / unfrozen_[q];
    sift_down(heap_pos_[q]);
  }
}

const std::vector<double>& MaxMinRates::solve() {
  const size_t resources = capacity_.size();
  const size_t flows = flow_begin_.size() - 1;
  // Resource -> flows, in flow order (counting sort).
  resource_begin_.assign(resources + 1, 0);
  for (uint32_t r : flow_resources_) ++resource_begin_[r + 1];
  for (size_t r = 0; r < resources; ++r) resource_begin_[r + 1] += resource_begin_[r];
  resource_flows_.resize(flow_resources_.size());
  unfrozen_.assign(resources, 0);
  for (uint32_t f = 0; f < flows; ++f) {
    for (uint32_t j = flow_begin_[f]; j < flow_begin_[f + 1]; ++j) {
      const uint32_t r = flow_resources_[j];
      resource_flows_[resource_begin_[r] + unfrozen_[r]++] = f;
    }
  }
  remaining_.assign(capacity_.begin(), capacity_.end());
  version_.assign(resources, 0);
  touched_version_.assign(resources, 0);
  frozen_.assign(flows, false);
  rates_.assign(flows, 0.0);
  level_.assign(resources, 0.0);
  heap_pos_.assign(resources, kNotInHeap);
  heap_.clear();
  for (uint32_t r = 0; r < resources; ++r) {
    if (unfrozen_[r] == 0) continue;
    level_[r] = remaining_[r] / unfrozen_[r];
    heap_pos_[r] = static_cast<uint32_t>(heap_.size());
    heap_.push_back(r);
  }
  // Built bottom-up in linear time. before() is a strict total order (level,
  // version, resource), so the order of the pops does not depend on the
  // heap's layout.
  for (size_t pos = heap_.size() / 2; pos-- > 0;) sift_down(pos);
  rising_flows_ = flows;
  double last_level = 0;
  while (!heap_.empty()) {
    const uint32_t r = heap_.front();
    heap_remove(r);
    // Levels only rise as resources saturate one after another.
    const double fixed = same_level(level_[r], last_level) ? last_level : level_[r];
    TW_ASSERT_HOT_MSG(fixed >= last_level, "progressive filling raises its level monotonically");
    last_level = fixed;
    freeze_at(r, fixed);
  }
  return rates_;
}

}  // namespace tensorwire::sim
