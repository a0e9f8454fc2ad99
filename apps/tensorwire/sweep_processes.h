// The process pool under `tensorwire sweep`: each point is a `tensorwire run`
// in its own process (so that points share nothing and a crash stays in its
// point), at most `jobs` at once, each with its stdout and stderr in a log file.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace tensorwire::app {

struct PointProcess {
  std::vector<std::string> argv;  // argv[0] is the executable's path
  std::string log_path;           // stdout and stderr, truncated first
};

// Runs every process, at most `jobs` (>= 1) at once, and calls `ended(i,
// exit_code)` as process i ends (its exit status, or 128 + the signal that
// ended it). Returns once all have ended; an error names the call that failed
// (posix_spawn, waitpid) and the point; processes already started are waited for.
Status run_point_processes(const std::vector<PointProcess>& processes, size_t jobs,
                           const std::function<void(size_t, int)>& ended);

}  // namespace tensorwire::app
