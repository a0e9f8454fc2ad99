// Deliberate bugs of the collective broadcast, planted to show that its
// invariants (and the model checker running them) catch them. Never set
// outside tests and `tensorwire check --plant-bug`.
#pragma once

#include <cstdint>
#include <string_view>

namespace tensorwire::collectives {

enum class PlantedCollectiveBug : uint8_t {
  kNone,
  kMaxConsumerRead,      // a producer reuses ring bytes once ANY consumer read them
  kFreeAtFirstConsumer,  // an IB buffer is freed when its first consumer finishes
  // The DMA sanitizer names it at the refill (the simulated NIC takes a
  // write's bytes when it posts it, so none arrive wrong):
  kReadReportedAtIssue,  // a consumer reports ring bytes read when its RDMA write is posted, not done
  // With registration windows: a writer does not cut its chunks at a window's
  // end, so a chunk crossing into the next window carries the first one's
  // rkey (each window is its own memory region); the NIC refuses the write.
  kChunkAcrossWindows,
};

inline constexpr PlantedCollectiveBug kPlantedCollectiveBugs[] = {
    PlantedCollectiveBug::kMaxConsumerRead, PlantedCollectiveBug::kFreeAtFirstConsumer,
    PlantedCollectiveBug::kReadReportedAtIssue, PlantedCollectiveBug::kChunkAcrossWindows};

// "max_consumer_read", "free_at_first_consumer", "read_reported_at_issue",
// "chunk_across_windows", "none".
const char* planted_collective_bug_name(PlantedCollectiveBug bug);
// False when `name` names no collective bug ("none" is kNone).
bool planted_collective_bug_from_name(std::string_view name, PlantedCollectiveBug& bug);

}  // namespace tensorwire::collectives
