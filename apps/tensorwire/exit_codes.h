// What tensorwire's exit status means; scripts and CI branch on it.
#pragma once

namespace tensorwire::app {

inline constexpr int kExitOk = 0;
// The run finished but failed a check (a Recv failed, content differed, the
// workload did not finish, requests were left pending).
inline constexpr int kExitCheckFailed = 1;
// Bad input: a scenario file, a flag, an output file that cannot be written.
inline constexpr int kExitBadInput = 2;
// A bug in tensorwire itself (an unexpected exception); please report it.
inline constexpr int kExitInternalError = 3;

}  // namespace tensorwire::app
