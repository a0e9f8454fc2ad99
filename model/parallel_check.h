// `check --jobs N`: the same search as one thread, on N threads.
//
// Every execution is a pure function of what steers it, so threads run
// executions ahead of the search and the search consumes them in its own
// order: the report (verdict, schedules, states, the counterexample, even
// the progress) is the one-thread report, whatever the timing.
//
// dfs: the executions DporSearch still has to explore are known by their
// prefixes (DporSearch::pending_prefixes), and every one of them will run
// until the search stops, so workers run the next few of them, recording
// each (ExecutionRecorder), and the search feeds the records to its
// DporSearch in its own order (feed_execution_log), as if it had run them.
// The states it has seen and those other runs digested are shared with the
// workers, which stop digesting states past one of them (where the search
// will most likely cut); where that guess was wrong, the search finds
// fingerprints missing before it feeds the record and runs that execution
// again with every state digested (log_has_fingerprints_to_cut).
//
// Random walks and pct: execution i draws from its own seed, and from what
// earlier executions measured (how many choice points an execution has, for
// where faults go; pct's k). Workers run executions ahead with the values
// known when they were queued; the search takes them in index order and runs
// again, itself, any whose values have changed since (rare once measured).
#pragma once

#include "model/explorer.h"

namespace tensorwire::model {

// `scenario` already model_scenario()'d; options.jobs threads in all (the
// calling thread is one).
CheckReport check_in_parallel(const Scenario& scenario, const CheckOptions& options,
                              const CheckProgress& on_progress);

}  // namespace tensorwire::model
