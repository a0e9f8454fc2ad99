#include "model/parallel_check.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "core/assert.h"
#include "model/check_loop.h"
#include "model/execution_log.h"
#include "runner/job_pool.h"

namespace tensorwire::model {
namespace {

// Executions queued ahead per thread, and kept finished but not yet consumed
// at most (each holds its record): enough to keep every thread busy while
// the search consumes one, without holding much of the search in memory.
constexpr size_t kAheadPerJob = 2;
constexpr size_t kKeptPerJob = 32;

// The states the search has seen, and those the workers digested (which it
// will most likely have seen by the time it takes their executions).
class SharedStates {
 public:
  bool contains(uint64_t fingerprint) const {
    std::shared_lock lock(mutex_);
    return states_.contains(fingerprint);
  }
  void add(const std::vector<uint64_t>& fingerprints) {
    std::unique_lock lock(mutex_);
    states_.insert(fingerprints.begin(), fingerprints.end());
  }

 private:
  mutable std::shared_mutex mutex_;
  FingerprintSet states_;
};

struct DfsRun {
  Execution execution;
  ExecutionLog log;
};

struct DfsSlot {
  std::shared_ptr<JobPool::Job> job;
  std::shared_ptr<DfsRun> run;
};

// The dfs search on the calling thread, its executions run ahead by workers.
class ParallelDfs {
 public:
  ParallelDfs(const Scenario& scenario, const CheckOptions& options)
      : scenario_(scenario), options_(options), faults_(fault_offer(options, 0, 0, 1)),
        dpor_(scenario.cluster.nodes), pool_(options.jobs - 1) {
    configure_dfs(dpor_, scenario, options);
  }

  CheckReport search(const CheckProgress& on_progress) {
    CheckTally tally;
    tally.total = options_.max_schedules;
    for (uint64_t n = 0; n < tally.total; ++n) {
      const std::vector<uint32_t> prefix = dpor_.current_prefix();
      Execution execution = slots_.contains(prefix) ? take_run_ahead(prefix) : run_here();
      const ExecutionKey key{n == 0, derive_seed(options_.seed, n), faults_, {}};
      if (tally.add(std::move(execution), key, on_progress)) break;
      if (!dpor_.next_execution()) {
        tally.report.exhausted = true;
        break;
      }
    }
    tally.finish(options_, &dpor_);
    return std::move(tally.report);
  }

 private:
  // The current prefix's execution, which no thread ran ahead: the race
  // analysis of the one before added it. Run here, steered by the search as
  // one thread would run it (no log to record and feed back), while the
  // workers run the alternatives queued next. About half of a dfs's
  // executions are such: recording them too kept this thread busy the whole
  // time, and --jobs 2 ran no faster than one thread.
  Execution run_here() {
    run_ahead();
    std::vector<uint64_t> added;
    struct Forget {  // `added` dies with this call, whatever it throws
      DporSearch& dpor;
      ~Forget() { dpor.set_on_new_state({}); }
    } forget{dpor_};
    dpor_.set_on_new_state([&added](uint64_t f) { added.push_back(f); });
    NullTraceSink trace;
    Execution execution = run_execution(scenario_, options_.seed, dpor_, trace, nullptr, faults_);
    seen_.add(added);
    return execution;
  }

  // The current prefix's execution, run ahead (or still running, or queued),
  // told to the search.
  Execution take_run_ahead(const std::vector<uint32_t>& prefix) {
    DfsSlot slot = slot_of(prefix);
    run_ahead();
    pool_.wait(slot.job);
    slots_.erase(prefix);
    const auto seen = [this](uint64_t f) { return dpor_.seen_states().contains(f); };
    if (!log_has_fingerprints_to_cut(slot.run->log, prefix.size(), options_.exact, seen)) {
      record(prefix, *slot.run, {});  // the worker guessed a cut too early: every state digested
    }
    consume(slot.run->log);
    return std::move(slot.run->execution);
  }

  // The execution of `prefix`, queued if it was not.
  DfsSlot slot_of(const std::vector<uint32_t>& prefix) {
    auto [it, fresh] = slots_.try_emplace(prefix);
    if (!fresh) return it->second;
    auto run = std::make_shared<DfsRun>();
    it->second.run = run;
    it->second.job = std::make_shared<JobPool::Job>([this, run, prefix] {
      record(prefix, *run, [this](uint64_t f) { return seen_.contains(f); });
      std::vector<uint64_t> digested;
      for (const ExecutionLog::ChoicePoint& p : run->log.choice_points) {
        if (p.fingerprint) digested.push_back(*p.fingerprint);
      }
      seen_.add(digested);
    });
    return it->second;
  }

  void record(const std::vector<uint32_t>& prefix, DfsRun& run, SeenBefore seen_before) const {
    ExecutionRecorder recorder(prefix, options_.exact, std::move(seen_before));
    NullTraceSink trace;
    run.execution = run_execution(scenario_, options_.seed, recorder, trace, nullptr, faults_);
    run.log = recorder.take_log();
  }

  // Queues the alternatives the search will take next, in its order.
  void run_ahead() {
    const size_t ahead = kAheadPerJob * options_.jobs;
    if (slots_.size() >= kKeptPerJob * options_.jobs) return;
    std::vector<std::shared_ptr<JobPool::Job>> jobs;
    for (const std::vector<uint32_t>& prefix : dpor_.pending_prefixes(ahead)) {
      jobs.push_back(slot_of(prefix).job);
    }
    pool_.queue(std::move(jobs));
  }

  // The recorded execution told to the search, each choice point with the
  // state the worker digested there.
  void consume(const ExecutionLog& log) {
    std::vector<uint64_t> asked;
    std::optional<uint64_t> here;
    dpor_.set_fingerprint([&here, &asked] {
      if (!here) throw std::logic_error("parallel dfs: a state the worker did not digest was asked for");
      asked.push_back(*here);
      return *here;
    });
    feed_execution_log(log, dpor_, [&here](const ExecutionLog::ChoicePoint& p) { here = p.fingerprint; });
    dpor_.set_fingerprint({});
    seen_.add(asked);
  }

  const Scenario& scenario_;
  const CheckOptions& options_;
  const FaultOffer faults_;  // dfs: the same offer for every execution
  DporSearch dpor_;
  SharedStates seen_;
  // By prefix. Hashed: the prefixes are a hundred choices long and share
  // most of them, so an ordered map's comparisons each read the common part
  // (3 % of a `--jobs 2` dfs's instructions, on the search's thread).
  absl::flat_hash_map<std::vector<uint32_t>, DfsSlot> slots_;
  JobPool pool_;  // last: its workers stop before what they use goes
};

// A random walk or pct execution, and the measured values it was drawn with.
struct WalkRun {
  uint64_t expected_steps = 1;
  uint64_t pct_steps = 1;  // before; after, once run
  FaultOffer faults;
  std::vector<uint64_t> fingerprints;
  Execution execution;
};

void run_walk_or_pct(const Scenario& scenario, const CheckOptions& options, uint64_t n, WalkRun& run) {
  const uint64_t strategy_seed = derive_seed(options.seed, execution_index(options, n));
  run.faults = fault_offer(options, n, strategy_seed, run.expected_steps);
  run.fingerprints.clear();
  if (options.strategy == CheckStrategy::kPct) {
    run.execution = run_pct(scenario, options, strategy_seed, run.pct_steps, run.fingerprints, run.faults);
  } else {
    run.execution = run_walk(scenario, options, strategy_seed, run.fingerprints, run.faults);
  }
}

// Whether execution n drawn with `run`'s values is the one the search draws
// now, with the tally's.
bool drawn_alike(const CheckOptions& options, uint64_t n, const WalkRun& run, uint64_t pct_steps_before,
                 const CheckTally& tally) {
  const bool forced_faults = !options.faults.empty() && n > 0;
  if (forced_faults && run.expected_steps != tally.expected_steps) return false;
  return options.strategy != CheckStrategy::kPct || pct_steps_before == tally.pct_steps;
}

CheckReport walks_in_parallel(const Scenario& scenario, const CheckOptions& options,
                              const CheckProgress& on_progress) {
  CheckTally tally;
  tally.total = shard_schedules(options);
  struct Slot {
    std::shared_ptr<JobPool::Job> job;
    std::shared_ptr<WalkRun> run;
    uint64_t pct_steps_before = 1;
  };
  std::map<uint64_t, Slot> slots;
  JobPool pool(options.jobs - 1);
  const uint64_t ahead = kAheadPerJob * options.jobs;
  for (uint64_t n = 0; n < tally.total; ++n) {
    std::vector<std::shared_ptr<JobPool::Job>> jobs;
    for (uint64_t m = n; m < std::min(tally.total, n + ahead); ++m) {
      auto [it, fresh] = slots.try_emplace(m);
      if (fresh) {
        auto run = std::make_shared<WalkRun>();
        run->expected_steps = tally.expected_steps;
        run->pct_steps = it->second.pct_steps_before = tally.pct_steps;
        it->second.run = run;
        it->second.job = std::make_shared<JobPool::Job>(
            [&scenario, &options, m, run] { run_walk_or_pct(scenario, options, m, *run); });
      }
      if (m > n) jobs.push_back(it->second.job);
    }
    pool.queue(std::move(jobs));
    Slot slot = slots.at(n);
    slots.erase(n);
    pool.wait(slot.job);
    WalkRun& run = *slot.run;
    if (!drawn_alike(options, n, run, slot.pct_steps_before, tally)) {
      run.expected_steps = tally.expected_steps;
      run.pct_steps = tally.pct_steps;
      run_walk_or_pct(scenario, options, n, run);
    }
    tally.pct_steps = std::max(tally.pct_steps, run.pct_steps);
    const uint64_t strategy_seed = derive_seed(options.seed, execution_index(options, n));
    if (tally.add(std::move(run.execution), {n == 0, strategy_seed, run.faults, run.fingerprints}, on_progress)) {
      break;
    }
  }
  tally.finish(options, nullptr);
  return std::move(tally.report);
}

}  // namespace

CheckReport check_in_parallel(const Scenario& scenario, const CheckOptions& options,
                              const CheckProgress& on_progress) {
  TW_ASSERT(options.jobs >= 1);
  if (options.strategy == CheckStrategy::kDfs) return ParallelDfs(scenario, options).search(on_progress);
  return walks_in_parallel(scenario, options, on_progress);
}

}  // namespace tensorwire::model
