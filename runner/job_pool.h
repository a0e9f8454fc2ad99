// Worker threads that run jobs ahead of the thread that needs their results:
// the threaded search (parallel_check.h) queues the executions it will need
// next, in the order it will need them, and waits for each in turn, running
// it itself when no worker has started it yet. A job's work must only touch
// what it owns or what is safe to share between threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tensorwire {

class JobPool {
 public:
  struct Job {
    explicit Job(std::function<void()> w) : work(std::move(w)) {}
    std::function<void()> work;
    enum class State : uint8_t { kQueued, kRunning, kDone } state = State::kQueued;  // under the pool's lock
    std::exception_ptr error;
  };

  // `threads` workers (0: every job runs in wait()).
  explicit JobPool(uint32_t threads);
  ~JobPool();  // drops the jobs not started, waits for those running
  JobPool(const JobPool&) = delete;
  JobPool& operator=(const JobPool&) = delete;

  // The jobs to start next, in order, instead of those queued before and not
  // started (which stay valid: wait() runs them).
  void queue(std::vector<std::shared_ptr<Job>> jobs);
  // Returns once `job` has run (rethrowing what its work threw): here, when
  // no worker has started it; while a worker runs it, this thread runs the
  // jobs queued next.
  void wait(const std::shared_ptr<Job>& job);

 private:
  void work_loop();
  // The first queued job no thread has started, taken off the queue (the
  // lock held); null when there is none.
  std::shared_ptr<Job> take_queued();
  static void run(Job& job);

  std::mutex mutex_;
  std::condition_variable queued_;
  std::condition_variable done_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tensorwire
