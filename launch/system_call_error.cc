#include "launch/system_call_error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tensorwire::launch {
namespace {

// strerror_r comes in two shapes (XSI returns int, GNU returns char*); these
// overloads accept whichever the C library declares.
[[maybe_unused]] const char* pick_text(int result, const char* buffer) {
  return result == 0 ? buffer : "unknown error";
}
[[maybe_unused]] const char* pick_text(const char* result, const char* /*buffer*/) {
  return result;
}

}  // namespace

std::string errno_text(int error_number) {
  char buffer[256] = {};
  return pick_text(strerror_r(error_number, buffer, sizeof buffer), buffer);
}

StatusCode status_code_for_errno(int error_number) {
  switch (error_number) {
    case ENOMEM:
    case ENOSPC: return StatusCode::kOutOfMemory;
    case EINVAL:
    case EFAULT:
    case ERANGE: return StatusCode::kInvalidArgument;
    case ENODEV:
    case ENOENT:
    case EADDRNOTAVAIL:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ECONNREFUSED:
    case EOPNOTSUPP:
    case EACCES:
    case EPERM: return StatusCode::kUnavailable;
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN: return StatusCode::kPeerGone;
    default: return StatusCode::kInternal;
  }
}

Status call_failed(std::string_view call, int error_number) {
  return call_failed(status_code_for_errno(error_number), call, error_number);
}

Status call_failed(StatusCode code, std::string_view call, int error_number) {
  std::string message(call);
  message += ": ";
  message += errno_text(error_number);
  return Status(code, std::move(message));
}

void report_teardown_failure(std::string_view call, int error_number) {
  const std::string text = errno_text(error_number);
  std::fprintf(stderr, "tensorwire: %.*s: %s\n", static_cast<int>(call.size()), call.data(),
               text.c_str());
}

}  // namespace tensorwire::launch
