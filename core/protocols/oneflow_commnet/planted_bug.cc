#include "core/protocols/oneflow_commnet/commnet_options.h"

namespace tensorwire::oneflow {

const char* planted_bug_name(PlantedBug bug) {
  switch (bug) {
    case PlantedBug::kNone: return "none";
    case PlantedBug::kReleaseAtReadPost: return "release_at_read_post";
    case PlantedBug::kNoRepostOnReadDone: return "no_repost_on_read_done";
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

}  // namespace tensorwire::oneflow
