// The physical lower bound of a broadcast: what no transfer graph can beat on
// this cluster, whatever its shape. Transfer graphs feed every instance whole
// by one copy (Realm's XferDes), so the bound is made under that rule, from
// bandwidths only (latencies are left out: they are microseconds against the
// milliseconds that matter):
//  - the source's node sends the payload out once if any destination is on
//    another node: bytes / NIC bandwidth;
//  - a node other than the source's with destinations receives it once:
//    bytes / NIC bandwidth;
//  - a node with destinations feeds them all through its NIC receive port
//    (instances x bytes / NIC bandwidth; only when the NIC reaches every one)
//    or feeds at least one by a local copy (bytes / the fastest local link
//    into it: PCIe or NVLink into a GPU, PCIe or the CPU's memcpy into host
//    memory), whichever is less. (A graph may route the data out and back in
//    over the network, so the source's node is no exception.)
// For broadcast_8x4 (1 GiB to 32 GPUs, no NVLink) the last rule gives 1 GiB
// through one 12 GB/s PCIe link: 89.5 ms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/protocols/realm_broadcast/cluster_topology.h"

namespace tensorwire::collectives {

struct PhysicalBound {
  TimeNs total_ns = 0;
  std::string what;  // the rule that gave it ("node1: one local copy over PCIe")
};

PhysicalBound physical_lower_bound(const ClusterTopology& topology, MemoryId source,
                                   const std::vector<MemoryId>& destinations, uint64_t bytes);

}  // namespace tensorwire::collectives
