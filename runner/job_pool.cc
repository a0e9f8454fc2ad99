#include "runner/job_pool.h"

#include "core/assert.h"

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

// While a worker runs `job`, this thread runs the jobs queued next rather
// than sleep: with one worker, sleeping made the two threads take turns (the
// worker had always started the job waited for next), so --jobs 2 ran no
// faster than one thread.
void JobPool::wait(const std::shared_ptr<Job>& job) {
  std::unique_lock lock(mutex_);
  while (job->state != Job::State::kDone) {
    std::shared_ptr<Job> next = job->state == Job::State::kQueued ? job : take_queued();
    if (!next) {
      done_.wait(lock, [&job] { return job->state == Job::State::kDone; });
      break;
    }
    TW_ASSERT(next->state == Job::State::kQueued);
    next->state = Job::State::kRunning;
    lock.unlock();
    run(*next);
    lock.lock();
    next->state = Job::State::kDone;
    done_.notify_all();
  }
  if (job->error) std::rethrow_exception(job->error);
}

std::shared_ptr<JobPool::Job> JobPool::take_queued() {
  while (!queue_.empty()) {
    std::shared_ptr<Job> next = std::move(queue_.front());
    queue_.pop_front();
    if (next->state == Job::State::kQueued) return next;  // else taken by wait()
  }
  return nullptr;
}

void JobPool::work_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::shared_ptr<Job> job = take_queued();
    if (!job) continue;
    job->state = Job::State::kRunning;
    lock.unlock();
    run(*job);
    lock.lock();
    job->state = Job::State::kDone;
    done_.notify_all();
  }
}

}  // namespace tensorwire
