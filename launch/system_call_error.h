// Status values that name the system call that failed, in the style of
// rdma-core's examples: "ibv_reg_mr(rxe0, 4096 bytes): Cannot allocate memory".
//
// Every libibverbs, librdmacm and socket call in backend_verbs/ and launch/ is
// checked and,
// when it fails, reported through these helpers, so a user reading an error
// learns which call failed, on what, and the system's own words for why.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace tensorwire::launch {

// strerror(error_number), thread-safe (ranks may set up from several threads).
std::string errno_text(int error_number);

// The StatusCode closest to an errno value: ENOMEM -> kOutOfMemory,
// EINVAL -> kInvalidArgument, ETIMEDOUT -> kUnavailable, ...
StatusCode status_code_for_errno(int error_number);

// "CALL: strerror(error_number)" with the code status_code_for_errno picks.
// `call` names the call and what it acted on: "ibv_reg_mr(rxe0, 4096 bytes)".
Status call_failed(std::string_view call, int error_number);
// The same with an explicit code, for calls whose errno does not say enough.
Status call_failed(StatusCode code, std::string_view call, int error_number);

// For destructors, which cannot return a Status: a failed teardown call
// (ibv_destroy_qp, ibv_dereg_mr, ...) leaks a resource and means a bug, so it
// is written to stderr as "tensorwire: CALL: strerror(error_number)".
void report_teardown_failure(std::string_view call, int error_number);

}  // namespace tensorwire::launch
