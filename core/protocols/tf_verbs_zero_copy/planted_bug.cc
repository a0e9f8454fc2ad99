#include "core/protocols/tf_verbs_zero_copy/tf_verbs_options.h"

namespace tensorwire::tf_verbs {

const char* planted_bug_name(PlantedBug bug) {
  switch (bug) {
    case PlantedBug::kNone: return "none";
    case PlantedBug::kStaleReRequestAddress: return "stale_re_request_address";
    case PlantedBug::kSkipClone: return "skip_clone";
    case PlantedBug::kReuseRequestIndex: return "reuse_request_index";
    case PlantedBug::kFreeProxyBeforeCopy: return "free_proxy_before_copy";
    case PlantedBug::kNoReallocOnSizeChange: return "no_realloc_on_size_change";
    case PlantedBug::kDestroyResponseEarly: return "destroy_response_early";
    case PlantedBug::kUnregisteredSource: return "unregistered_source";
    case PlantedBug::kSendDoneBeforeWrite: return "send_done_before_write";
    case PlantedBug::kDeregisterSourceEarly: return "deregister_source_early";
    case PlantedBug::kPoolOverlap: return "pool_overlap";
    case PlantedBug::kFreeOnWithdraw: return "free_on_withdraw";
    case PlantedBug::kWriteBeforeStagingCopy: return "write_before_staging_copy";
    case PlantedBug::kIgnoreProtoSize: return "ignore_proto_size";
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

}  // namespace tensorwire::tf_verbs
