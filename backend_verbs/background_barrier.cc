#include "backend_verbs/background_barrier.h"

namespace tensorwire::verbs {

BackgroundBarrier::~BackgroundBarrier() {
  if (thread_.joinable()) thread_.join();
}

Status BackgroundBarrier::start(std::chrono::milliseconds timeout) {
  if (thread_.joinable()) {
    return Status(StatusCode::kInvalidArgument, "a barrier is already running");
  }
  if (timeout.count() <= 0) {
    return Status(StatusCode::kInvalidArgument, "a barrier's timeout must be positive");
  }
  finished_.store(false, std::memory_order_relaxed);
  result_ = Status();
  thread_ = std::thread([this, timeout] {
    result_ = coordinator_.barrier(timeout);
    finished_.store(true, std::memory_order_release);
  });
  return {};
}

std::optional<Status> BackgroundBarrier::poll() {
  if (!thread_.joinable() || !finished_.load(std::memory_order_acquire)) return std::nullopt;
  thread_.join();
  return result_;
}

}  // namespace tensorwire::verbs
