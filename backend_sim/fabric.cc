#include "backend_sim/fabric.h"

#include <algorithm>

#include "core/assert.h"
#include "core/splitmix64.h"

namespace tensorwire::sim {
namespace {

// One well-mixed value per ordered pair: what a switch's hash of the
// packet's addresses gives, stable across runs.
uint64_t pair_hash(uint32_t a, uint32_t b) {
  uint64_t state = uint64_t{a} << 32 | b;
  return splitmix64(state);
}

}  // namespace

Fabric::Fabric(const Cluster& cluster)
    : topology_(cluster.topology), nodes_(cluster.nodes), nic_latency_ns_(cluster.nic_latency_ns) {
  // The scenario loader validated the topology; a library caller's mistake stops here.
  TW_ASSERT_MSG(cluster.nic_bandwidth_bytes_per_s > 0, "a NIC's bandwidth is positive");
  if (topology_.kind == TopologyKind::kRail) {
    TW_ASSERT_MSG(topology_.rails >= 1, "a rail topology has at least one rail");
    nics_ = topology_.rails;
  }
  capacity_.assign(size_t{2} * nodes_ * nics_, cluster.nic_bandwidth_bytes_per_s);
  if (topology_.kind != TopologyKind::kLeafSpine) return;
  TW_ASSERT_MSG(topology_.leaf_nodes >= 1 && nodes_ % topology_.leaf_nodes == 0,
                "leaves of leaf_nodes nodes divide the cluster");
  TW_ASSERT_MSG(topology_.spines >= 1 && topology_.oversubscription > 0,
                "a leaf-spine topology has spines and a positive oversubscription");
  leaves_ = nodes_ / topology_.leaf_nodes;
  // A leaf's uplinks carry 1/oversubscription of its nodes' NIC bandwidth,
  // spread evenly over its spines.
  const double link_bytes_per_s = cluster.nic_bandwidth_bytes_per_s * topology_.leaf_nodes /
                                  (topology_.spines * topology_.oversubscription);
  capacity_.resize(capacity_.size() + size_t{2} * leaves_ * topology_.spines, link_bytes_per_s);
}

std::string Fabric::resource_name(uint32_t resource) const {
  TW_ASSERT(resource < capacity_.size());
  if (resource < first_link()) {
    const bool is_tx = resource < nodes_ * nics_;
    const uint32_t local = is_tx ? resource : resource - nodes_ * nics_;
    const std::string nic = nics_ == 1 ? "nic" : "nic" + std::to_string(local % nics_);
    return "node" + std::to_string(local / nics_) + "/" + nic + (is_tx ? " tx" : " rx");
  }
  const uint32_t link = resource - first_link();
  const uint32_t per_direction = leaves_ * topology_.spines;
  const uint32_t within = link % per_direction;
  const std::string leaf = "leaf" + std::to_string(within / topology_.spines);
  const std::string spine = "spine" + std::to_string(within % topology_.spines);
  return link < per_direction ? leaf + "->" + spine : spine + "->" + leaf;
}

ResourceKind Fabric::resource_kind(uint32_t resource) const {
  if (resource >= first_link()) return ResourceKind::kFabricLink;
  return resource < nodes_ * nics_ ? ResourceKind::kNicSend : ResourceKind::kNicReceive;
}

uint32_t Fabric::resource_node(uint32_t resource) const {
  if (resource < first_link()) return (resource % (nodes_ * nics_)) / nics_;
  const uint32_t within = (resource - first_link()) % (leaves_ * topology_.spines);
  return within / topology_.spines * topology_.leaf_nodes;
}

uint32_t Fabric::leaf_of(uint32_t node) const {
  TW_ASSERT_HOT(topology_.kind == TopologyKind::kLeafSpine && node < nodes_);
  return node / topology_.leaf_nodes;
}

uint32_t Fabric::uplink(uint32_t leaf, uint32_t spine) const {
  TW_ASSERT_HOT(leaf < leaves_ && spine < topology_.spines);
  return first_link() + leaf * topology_.spines + spine;
}

uint32_t Fabric::downlink(uint32_t spine, uint32_t leaf) const {
  TW_ASSERT_HOT(leaf < leaves_ && spine < topology_.spines);
  return first_link() + (leaves_ + leaf) * topology_.spines + spine;
}

uint32_t Fabric::spine_of(uint32_t src, uint32_t dst) const {
  TW_ASSERT_HOT(topology_.spines >= 1);
  return static_cast<uint32_t>(pair_hash(src, dst) % topology_.spines);
}

uint32_t Fabric::rail_of(uint32_t a, uint32_t b) const {
  // Both ends of a queue pair are on one rail: hash the unordered pair.
  return static_cast<uint32_t>(pair_hash(std::min(a, b), std::max(a, b)) % nics_);
}

Route Fabric::route(uint32_t src, uint32_t dst) const {
  TW_ASSERT_HOT(src < nodes_ && dst < nodes_ && src != dst);
  Route r;
  auto add = [&r](uint32_t resource) { r.resources[r.hops++] = resource; };
  switch (topology_.kind) {
    case TopologyKind::kStar:
      add(tx(src, 0));
      add(rx(dst, 0));
      return r;
    case TopologyKind::kRail: {
      const uint32_t rail = rail_of(src, dst);
      add(tx(src, rail));
      add(rx(dst, rail));
      return r;
    }
    case TopologyKind::kLeafSpine:
      break;
  }
  add(tx(src, 0));
  if (leaf_of(src) != leaf_of(dst)) {
    const uint32_t spine = spine_of(src, dst);
    add(uplink(leaf_of(src), spine));
    add(downlink(spine, leaf_of(dst)));
    r.link_latency_ns = 2 * topology_.link_latency_ns;
  }
  add(rx(dst, 0));
  return r;
}

TimeNs Fabric::latency_ns(uint32_t src, uint32_t dst) const {
  if (topology_.kind != TopologyKind::kLeafSpine || leaf_of(src) == leaf_of(dst)) {
    return nic_latency_ns_;
  }
  return nic_latency_ns_ + 2 * topology_.link_latency_ns;
}

}  // namespace tensorwire::sim
