#include "model/execution_log.h"

#include <stdexcept>
#include <string>
#include <unordered_set>

namespace tensorwire::model {

ExecutionRecorder::ExecutionRecorder(std::vector<uint32_t> prefix, bool exact, SeenBefore seen_before)
    : prefix_(std::move(prefix)), exact_(exact), seen_before_(std::move(seen_before)) {}

uint32_t ExecutionRecorder::choose(std::span<const sim::ReadyEvent> ready, uint64_t step) {
  ExecutionLog::ChoicePoint point;
  point.first_ready = static_cast<uint32_t>(log_.ready.size());
  point.ready_count = static_cast<uint32_t>(ready.size());
  point.chosen = step < prefix_.size() ? prefix_[step] : 0;
  log_.ready.insert(log_.ready.end(), ready.begin(), ready.end());
  if (step >= prefix_.size() && fingerprinting_ && fingerprint_) {
    point.fingerprint = fingerprint_();
    // DporSearch cuts at the first seen state where it may cut; the rest of
    // the execution is never asked about, so its states need not be digested.
    const bool may_cut = !exact_ || !any_ran_ || last_ran_at_ns_ < ready[0].at_ns;
    if (may_cut && seen_before_ && seen_before_(*point.fingerprint)) fingerprinting_ = false;
  }
  log_.calls.push_back(ExecutionLog::Call::kChoose);
  log_.choice_points.push_back(point);
  return point.chosen;
}

void ExecutionRecorder::ran(const sim::ReadyEvent& event) {
  any_ran_ = true;
  last_ran_at_ns_ = event.at_ns;
  log_.calls.push_back(ExecutionLog::Call::kRan);
  log_.ran.push_back(event);
}

void ExecutionRecorder::used(const sim::SharedObject& object) {
  log_.calls.push_back(ExecutionLog::Call::kUsed);
  log_.used.push_back(object);
}

void ExecutionRecorder::nic_work_on_send_queue(uint32_t rank, uint32_t peer) {
  log_.calls.push_back(ExecutionLog::Call::kNicWork);
  log_.nic_work.emplace_back(rank, peer);
}

bool log_has_fingerprints_to_cut(const ExecutionLog& log, size_t prefix, bool exact,
                                 const std::function<bool(uint64_t)>& seen) {
  std::unordered_set<uint64_t> here;  // states this execution reached before
  size_t choice = 0, ran = 0;
  for (ExecutionLog::Call call : log.calls) {
    if (call == ExecutionLog::Call::kRan) ++ran;
    if (call != ExecutionLog::Call::kChoose) continue;
    const ExecutionLog::ChoicePoint& point = log.choice_points[choice++];
    if (choice <= prefix) continue;
    const int64_t at_ns = log.ready[point.first_ready].at_ns;
    const bool may_cut = !exact || ran == 0 || log.ran[ran - 1].at_ns < at_ns;
    if (!may_cut) continue;  // asks nothing here (DporSearch::choose)
    if (!point.fingerprint) return false;
    if (seen(*point.fingerprint) || !here.insert(*point.fingerprint).second) return true;
  }
  return true;
}

void feed_execution_log(const ExecutionLog& log, ChoiceStrategy& strategy,
                        const std::function<void(const ExecutionLog::ChoicePoint&)>& on_choice_point) {
  size_t choice = 0, ran = 0, used = 0, nic = 0;
  for (ExecutionLog::Call call : log.calls) {
    switch (call) {
      case ExecutionLog::Call::kChoose: {
        const ExecutionLog::ChoicePoint& point = log.choice_points[choice];
        if (on_choice_point) on_choice_point(point);
        const std::span<const sim::ReadyEvent> ready(log.ready.data() + point.first_ready, point.ready_count);
        if (strategy.choose(ready, choice) != point.chosen) {
          throw std::logic_error("recorded execution: the search chose otherwise at choice point " +
                                 std::to_string(choice) + " than the run it replays");
        }
        ++choice;
        break;
      }
      case ExecutionLog::Call::kRan: strategy.ran(log.ran[ran++]); break;
      case ExecutionLog::Call::kUsed: strategy.used(log.used[used++]); break;
      case ExecutionLog::Call::kNicWork:
        strategy.nic_work_on_send_queue(log.nic_work[nic].first, log.nic_work[nic].second);
        ++nic;
        break;
    }
  }
}

}  // namespace tensorwire::model
