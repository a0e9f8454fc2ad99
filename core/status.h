// Errors as values at the NIC, wire and memory boundaries.
//
// Status carries a code and a human message naming what failed; Result<T> is a
// value or a Status. (std::expected is C++23; this is the C++20 stand-in.)
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tensorwire {

enum class StatusCode {
  kOk = 0,
  kNoResource,        // queue full: keep the work in a pending queue, retry on a completion
  kInvalidArgument,   // caller error: bad length, unknown key, ...
  kMalformedMessage,  // a peer's wire message failed validation
  kNotFound,          // unknown tensor, region, request_index
  kOutOfMemory,       // allocation or registration failed
  kQpError,           // the queue pair is in the error state
  kRemoteAccess,      // remote access error (bad rkey, bounds, rights, deregistered)
  kAborted,           // the step was aborted
  kPeerGone,          // the peer crashed or the connection dropped
  kUnavailable,       // backend cannot do this (e.g. no GPU)
  kInternal,
  // A limit of the harness itself was reached (payload memory, the simulated
  // address space): the scenario is too big for this run, not the protocol's fault.
  kResourceLimit,
  // Append only: the numbers travel in wire messages (a peer's error code).
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "CODE: message", for logs and errors shown to users.
  std::string to_string() const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status error) : v_(std::move(error)) { assert(!std::get<Status>(v_).is_ok()); }  // NOLINT

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // The error; ok() when this holds a value.
  Status status() const { return is_ok() ? Status::ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tensorwire
