#include "backend_verbs/verbs_rank_env.h"

namespace tensorwire::verbs {

VerbsRankEnv::VerbsRankEnv(VerbsNic& nic, TraceSink& trace, bool trace_nic)
    : nic_(nic), trace_(trace), counting_nic_(nic), copy_engine_(memory_) {
  if (trace_nic) tracing_nic_.emplace(counting_nic_, clock_, trace_);
}

Result<uint32_t> VerbsRankEnv::poll() {
  Result<uint32_t> completions = nic_.progress();
  if (!completions.is_ok()) return completions.status();
  uint32_t events = *completions;
  events += clock_.fire_due();
  events += copy_engine_.progress();
  return events;
}

Result<uint32_t> VerbsRankEnv::wait_idle(std::chrono::milliseconds longest, bool* slept,
                                         std::span<const int> also_wake_on) {
  *slept = false;
  if (!nic_.uses_completion_channel() || copy_engine_.pending() > 0) return 0u;
  std::chrono::milliseconds wait = longest;
  if (const std::optional<TimeNs> due = clock_.next_due_ns()) {
    // The channel's wait counts whole milliseconds.
    const TimeNs left_ns = *due - clock_.now_ns();
    if (left_ns < 1'000'000) return 0u;
    wait = std::min(wait, std::chrono::milliseconds(left_ns / 1'000'000));
  }
  *slept = true;
  Result<uint32_t> completions = nic_.wait_for_completions(wait, also_wake_on);
  if (!completions.is_ok()) return completions.status();
  return *completions + clock_.fire_due();
}

}  // namespace tensorwire::verbs
