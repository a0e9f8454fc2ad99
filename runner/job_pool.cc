#include "runner/job_pool.h"

namespace tensorwire {

JobPool::JobPool(uint32_t threads) {
  threads_.reserve(threads);
  for (uint32_t t = 0; t < threads; ++t) threads_.emplace_back([this] { work_loop(); });
}

JobPool::~JobPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  queued_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void JobPool::queue(std::vector<std::shared_ptr<Job>> jobs) {
  {
    std::lock_guard lock(mutex_);
    queue_.assign(jobs.begin(), jobs.end());
  }
  queued_.notify_all();
}

void JobPool::run(Job& job) {
  try {
    job.work();
  } catch (...) {
    job.error = std::current_exception();
  }
}

void JobPool::wait(const std::shared_ptr<Job>& job) {
  std::unique_lock lock(mutex_);
  if (job->state == Job::State::kQueued) {
    job->state = Job::State::kRunning;
    lock.unlock();
    run(*job);
    lock.lock();
    job->state = Job::State::kDone;
  }
  done_.wait(lock, [&job] { return job->state == Job::State::kDone; });
  if (job->error) std::rethrow_exception(job->error);
}

void JobPool::work_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    if (job->state != Job::State::kQueued) continue;  // taken by wait()
    job->state = Job::State::kRunning;
    lock.unlock();
    run(*job);
    lock.lock();
    job->state = Job::State::kDone;
    done_.notify_all();
  }
}

}  // namespace tensorwire
