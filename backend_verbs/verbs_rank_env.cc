#include "backend_verbs/verbs_rank_env.h"

namespace tensorwire::verbs {

VerbsRankEnv::VerbsRankEnv(VerbsNic& nic, TraceSink& trace)
    : nic_(nic), trace_(trace), counting_nic_(nic), copy_engine_(memory_) {}

Result<uint32_t> VerbsRankEnv::poll() {
  Result<uint32_t> completions = nic_.progress();
  if (!completions.is_ok()) return completions.status();
  uint32_t events = *completions;
  events += clock_.fire_due();
  events += copy_engine_.progress();
  return events;
}

}  // namespace tensorwire::verbs
