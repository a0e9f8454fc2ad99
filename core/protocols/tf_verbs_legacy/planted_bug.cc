#include "core/protocols/tf_verbs_legacy/legacy_options.h"

namespace tensorwire::tf_legacy {

const char* planted_bug_name(PlantedBug bug) {
  switch (bug) {
    case PlantedBug::kNone: return "none";
    case PlantedBug::kIdleBeforeAck: return "idle_before_ack";
    case PlantedBug::kReallocWhileWritePending: return "realloc_while_write_pending";
  }
  return "?";
}

bool planted_bug_from_name(std::string_view name, PlantedBug& bug) {
  if (name == "none") {
    bug = PlantedBug::kNone;
    return true;
  }
  for (PlantedBug b : kPlantedBugs) {
    if (name == planted_bug_name(b)) {
      bug = b;
      return true;
    }
  }
  return false;
}

}  // namespace tensorwire::tf_legacy
