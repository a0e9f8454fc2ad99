// A coordinator barrier that does not stop the rank's progress loop.
//
// A rank whose own Recvs of a phase are done must still serve its peers (their
// requests for tensors it sends) until every rank is done, so it cannot block
// in TcpCoordinator::barrier. start() runs the barrier on a thread of its own;
// the progress loop keeps polling the NIC and asks poll() whether the barrier
// has ended. The coordinator is touched by that thread alone until poll() has
// reported the result (TcpCoordinator is not thread-safe), and every barrier
// has a deadline, so the thread always ends.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "backend_verbs/tcp_coordinator.h"
#include "core/status.h"

namespace tensorwire::verbs {

class BackgroundBarrier {
 public:
  explicit BackgroundBarrier(TcpCoordinator& coordinator) : coordinator_(coordinator) {}
  ~BackgroundBarrier();  // waits for a running barrier (bounded by its deadline)
  BackgroundBarrier(const BackgroundBarrier&) = delete;
  BackgroundBarrier& operator=(const BackgroundBarrier&) = delete;

  // kInvalidArgument when one is still running or the timeout is not positive.
  Status start(std::chrono::milliseconds timeout);
  // The barrier's result once it has ended (then another may start); nullopt
  // while it runs or when none was started.
  std::optional<Status> poll();
  bool running() const { return thread_.joinable(); }

 private:
  TcpCoordinator& coordinator_;
  std::thread thread_;
  std::atomic<bool> finished_{false};
  Status result_;  // written by the thread before finished_ is set
};

}  // namespace tensorwire::verbs
