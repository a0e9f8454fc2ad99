#include "core/resource_usage.h"

#include "core/assert.h"

namespace tensorwire {

const char* resource_kind_name(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kNicSend: return "nic send";
    case ResourceKind::kNicReceive: return "nic receive";
    case ResourceKind::kCopyEngine: return "copy engine";
    case ResourceKind::kCpu: return "cpu";
    case ResourceKind::kFabricLink: return "fabric link";
  }
  TW_UNREACHABLE("a resource of unknown kind");
}

const ResourceUsage* busiest_resource(const std::vector<ResourceUsage>& usage) {
  const ResourceUsage* busiest = nullptr;
  for (const ResourceUsage& u : usage) {
    if (u.busy_ns > 0 && (busiest == nullptr || u.busy_ns > busiest->busy_ns)) busiest = &u;
  }
  return busiest;
}

std::vector<ResourceUsage> usage_between(const std::vector<ResourceUsage>& usage_before,
                                         const std::vector<ResourceUsage>& usage_after) {
  TW_ASSERT_MSG(usage_before.size() == usage_after.size(),
                "two snapshots of one run list the same resources");
  std::vector<ResourceUsage> window = usage_after;
  for (size_t i = 0; i < window.size(); ++i) {
    TW_ASSERT_MSG(usage_before[i].name == window[i].name &&
                      usage_before[i].busy_ns <= window[i].busy_ns &&
                      usage_before[i].bytes <= window[i].bytes,
                  "a resource's busy time and bytes only grow");
    window[i].busy_ns -= usage_before[i].busy_ns;
    window[i].bytes -= usage_before[i].bytes;
  }
  return window;
}

}  // namespace tensorwire
