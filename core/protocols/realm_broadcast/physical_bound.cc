#include "core/protocols/realm_broadcast/physical_bound.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/assert.h"

namespace tensorwire::collectives {
namespace {

TimeNs time_ns(double bytes, double bytes_per_s) {
  TW_ASSERT_MSG(bytes_per_s > 0, "a validated cluster has positive bandwidths");
  return static_cast<TimeNs>(std::min(std::ceil(bytes * 1e9 / bytes_per_s), 4e18));
}

// The fastest local link that can copy into `m`, with its name.
std::pair<double, std::string> fastest_local_link_into(const Cluster& c, MemoryId m) {
  if (m.is_host()) {
    return c.host_memcpy_bandwidth_bytes_per_s > c.pcie_bandwidth_bytes_per_s
               ? std::pair(c.host_memcpy_bandwidth_bytes_per_s, std::string("host memcpy"))
               : std::pair(c.pcie_bandwidth_bytes_per_s, std::string("PCIe"));
  }
  return c.nvlink_bandwidth_bytes_per_s > c.pcie_bandwidth_bytes_per_s
             ? std::pair(c.nvlink_bandwidth_bytes_per_s, std::string("NVLink"))
             : std::pair(c.pcie_bandwidth_bytes_per_s, std::string("PCIe"));
}

void raise(PhysicalBound& bound, TimeNs ns, std::string what) {
  if (ns <= bound.total_ns) return;
  bound.total_ns = ns;
  bound.what = std::move(what);
}

// The receive side of one node: `dests` are its destination instances.
void bound_node(PhysicalBound& bound, const ClusterTopology& topology, uint32_t node,
                bool source_here, const std::vector<MemoryId>& dests, double bytes) {
  const Cluster& c = topology.cluster();
  const std::string name = "node" + std::to_string(node);
  const TimeNs nic_ns = time_ns(bytes, c.nic_bandwidth_bytes_per_s);
  if (!source_here) raise(bound, nic_ns, name + ": the payload in through its NIC once");
  if (dests.empty()) return;
  // At least one local copy, over the fastest link into any of them...
  TimeNs local_ns = 0;
  std::string local_what;
  for (const MemoryId& d : dests) {
    const auto [bandwidth, link] = fastest_local_link_into(c, d);
    const TimeNs ns = time_ns(bytes, bandwidth);
    if (local_ns == 0 || ns < local_ns) {
      local_ns = ns;
      local_what = name + ": " + std::to_string(dests.size()) + " instances, one fed by a local copy over " + link;
    }
  }
  // ...unless the NIC port can feed every one of them.
  bool all_reachable = true;
  for (const MemoryId& d : dests) all_reachable = all_reachable && is_nic_reachable(topology.kind_of(d));
  const TimeNs all_nic_ns = time_ns(bytes * static_cast<double>(dests.size()), c.nic_bandwidth_bytes_per_s);
  if (all_reachable && all_nic_ns < local_ns) {
    raise(bound, all_nic_ns, name + ": " + std::to_string(dests.size()) + " instances through its NIC");
  } else {
    raise(bound, local_ns, local_what);
  }
}

}  // namespace

PhysicalBound physical_lower_bound(const ClusterTopology& topology, MemoryId source,
                                   const std::vector<MemoryId>& destinations, uint64_t bytes) {
  PhysicalBound bound;
  if (bytes == 0) return bound;
  std::map<uint32_t, std::vector<MemoryId>> by_node;
  for (const MemoryId& d : destinations) by_node[d.node].push_back(d);
  const double b = static_cast<double>(bytes);
  if (by_node.size() > 1 || (by_node.size() == 1 && !by_node.contains(source.node))) {
    raise(bound, time_ns(b, topology.cluster().nic_bandwidth_bytes_per_s),
          "node" + std::to_string(source.node) + ": the payload out through its NIC once");
  }
  for (const auto& [node, dests] : by_node) {
    bound_node(bound, topology, node, node == source.node, dests, b);
  }
  return bound;
}

}  // namespace tensorwire::collectives
