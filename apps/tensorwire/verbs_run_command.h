// `tensorwire run SCENARIO --backend verbs ...`: this process runs one rank of
// the scenario on a real RDMA device (runner/verbs_run.h). Rank and world come
// from --rank/--world, else Open MPI's or Slurm's environment. Every rank
// prints a summary of the whole run (the ranks gather their results at the
// end); rank 0 alone writes --json. Exit codes as for the simulator: 0 every
// check passed, 1 one failed (or the run broke off: a rank died, a deadline
// passed), 2 bad input (a flag, the scenario, a device that does not exist).
#pragma once

#include <ostream>
#include <string>

#include "apps/tensorwire/run_command.h"

namespace tensorwire::app {

int verbs_run_command(const RunArgs& args, std::ostream& out, std::ostream& err);

// The first verbs-only flag set in `args` ("--device"), or "" when none is.
std::string verbs_only_flag_given(const VerbsArgs& args);

// Whether this tensorwire was built with the verbs backend.
bool verbs_backend_available();

// Parses "--phase-timeout"-style seconds (a positive number, fractions
// allowed, at most a day) into milliseconds; an error message naming `flag`
// otherwise (empty on success).
std::string parse_timeout_seconds(const std::string& text, const char* flag, long long* ms);

}  // namespace tensorwire::app
