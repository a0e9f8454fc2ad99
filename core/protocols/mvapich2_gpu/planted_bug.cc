#include "core/protocols/mvapich2_gpu/mv2_options.h"

namespace tensorwire::mvapich2 {

const char* staging_name(Staging s) {
  switch (s) {
    case Staging::kNaive: return "naive";
    case Staging::kPipelined: return "pipelined";
  }
  return "?";
}

bool staging_from_name(std::string_view name, Staging& s) {
  for (Staging candidate : {Staging::kNaive, Staging::kPipelined}) {
    if (name == staging_name(candidate)) {
      s = candidate;
      return true;
    }
  }
  return false;
}

const char* planted_bug_name(PlantedBug bug) {
  switch (bug) {
    case PlantedBug::kNone: return "none";
    case PlantedBug::kVbufReuseAtWritePost: return "vbuf_reuse_at_write_post";
    case PlantedBug::kFinBeforeWriteCompletion: return "fin_before_write_completion";
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

}  // namespace tensorwire::mvapich2
