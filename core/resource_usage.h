// How busy each piece of hardware a run used was: every NIC port's send and
// receive side, every copy engine (one per GPU, its PCIe or NVLink path) and
// every rank's CPU (the progress loop's registrations and memcpys). Busy time
// is work, not wall time: a port side that moved n bytes was busy
// n / bandwidth, however the bytes were spread, so the busiest resource's
// busy time is a lower bound on the time the work could take on this
// hardware. The simulator fills it; the verbs backend measures none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"

namespace tensorwire {

// kFabricLink: one direction of a switch-to-switch link (a leaf-spine
// topology's uplinks); a star has none.
enum class ResourceKind : uint8_t { kNicSend, kNicReceive, kCopyEngine, kCpu, kFabricLink };

// "nic send", "nic receive", "copy engine", "cpu", "fabric link".
const char* resource_kind_name(ResourceKind kind);

struct ResourceUsage {
  std::string name;  // "node0/nic tx", "node0/nic rx", "node1/copy0", "rank 2/cpu"
  ResourceKind kind = ResourceKind::kNicSend;
  uint32_t node = 0;
  TimeNs busy_ns = 0;
  uint64_t bytes = 0;  // moved through it (0 for a CPU)
};

// The busiest resource of `usage` (the first of equals, so the choice is
// deterministic); nullptr when it is empty or none was ever busy.
const ResourceUsage* busiest_resource(const std::vector<ResourceUsage>& usage);

// usage_after minus usage_before, resource by resource (both from one run, so
// they list the same resources in the same order): what a window of the run used.
std::vector<ResourceUsage> usage_between(const std::vector<ResourceUsage>& usage_before,
                                         const std::vector<ResourceUsage>& usage_after);

}  // namespace tensorwire
