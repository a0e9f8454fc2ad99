#include "core/protocols/realm_broadcast/planted_collective_bug.h"

namespace tensorwire::collectives {

const char* planted_collective_bug_name(PlantedCollectiveBug bug) {
  switch (bug) {
    case PlantedCollectiveBug::kNone: return "none";
    case PlantedCollectiveBug::kMaxConsumerRead: return "max_consumer_read";
    case PlantedCollectiveBug::kFreeAtFirstConsumer: return "free_at_first_consumer";
    case PlantedCollectiveBug::kReadReportedAtIssue: return "read_reported_at_issue";
    case PlantedCollectiveBug::kChunkAcrossWindows: return "chunk_across_windows";
  }
  return "?";
}

bool planted_collective_bug_from_name(std::string_view name, PlantedCollectiveBug& bug) {
  if (name == "none") {
    bug = PlantedCollectiveBug::kNone;
    return true;
  }
  for (PlantedCollectiveBug b : kPlantedCollectiveBugs) {
    if (name == planted_collective_bug_name(b)) {
      bug = b;
      return true;
    }
  }
  return false;
}

}  // namespace tensorwire::collectives
