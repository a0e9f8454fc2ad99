// What tensorwire's exit status means; scripts and CI branch on it.
#pragma once

namespace tensorwire::app {

inline constexpr int kExitOk = 0;
// The run finished but failed a check (a Recv failed, content differed, the
// workload did not finish, requests were left pending).
inline constexpr int kExitCheckFailed = 1;
// Bad input: a scenario file, a flag, an output file that cannot be written.
inline constexpr int kExitBadInput = 2;
// `check` found a liveness violation: a deadlock, or a request that never completes.
// (`check` reports a safety violation as kExitCheckFailed.)
inline constexpr int kExitLivenessViolation = 3;
// `check --strategy dfs` stopped at --max-schedules before it had explored
// every order, and found nothing in those it did: not a proof of absence.
// (random and pct never explore every order; finding nothing there is 0.)
inline constexpr int kExitSearchIncomplete = 4;
// A bug in tensorwire itself (an unexpected exception); please report it.
// EX_SOFTWARE of sysexits.h, clear of every code a command gives on purpose.
inline constexpr int kExitInternalError = 70;

}  // namespace tensorwire::app
