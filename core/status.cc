#include "core/status.h"

namespace tensorwire {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kNoResource: return "NO_RESOURCE";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kMalformedMessage: return "MALFORMED_MESSAGE";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kOutOfMemory: return "OUT_OF_MEMORY";
    case StatusCode::kResourceLimit: return "RESOURCE_LIMIT";
    case StatusCode::kQpError: return "QP_ERROR";
    case StatusCode::kRemoteAccess: return "REMOTE_ACCESS";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kPeerGone: return "PEER_GONE";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace tensorwire
