// JobPool, under the threaded search: a thread waiting for a job a worker is
// running runs the jobs queued next meanwhile (with one worker, sleeping made
// the two threads take turns); every job runs once; what a job throws reaches
// the thread that waits for it.
#include "runner/job_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace tensorwire::testing {
namespace {

TEST(JobPool, AWaiterRunsTheNextQueuedJobWhileAWorkerRunsTheOneItWaitsFor) {
  JobPool pool(1);
  std::mutex mutex;
  std::condition_variable changed;
  bool first_started = false;
  bool second_ran = false;
  bool first_saw_second = false;
  // The first job, on the worker, finishes only once the second has run; the
  // second is queued behind it, so only the waiting thread can run it.
  auto first = std::make_shared<JobPool::Job>([&] {
    std::unique_lock lock(mutex);
    first_started = true;
    changed.notify_all();
    // A generous bound instead of a hang should the waiter not help.
    first_saw_second = changed.wait_for(lock, std::chrono::seconds(30), [&] { return second_ran; });
  });
  auto second = std::make_shared<JobPool::Job>([&] {
    std::lock_guard lock(mutex);
    second_ran = true;
    changed.notify_all();
  });
  pool.queue({first});
  {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return first_started; });  // the worker has it
  }
  pool.queue({second});
  pool.wait(first);
  EXPECT_TRUE(first_saw_second) << "the waiting thread ran the queued job meanwhile";
  pool.wait(second);
  EXPECT_TRUE(second_ran);
}

TEST(JobPool, EveryJobRunsOnceWhoeverRunsIt) {
  JobPool pool(1);
  std::vector<std::atomic<int>> runs(200);
  std::vector<std::shared_ptr<JobPool::Job>> jobs;
  for (size_t i = 0; i < runs.size(); ++i) {
    jobs.push_back(std::make_shared<JobPool::Job>([&runs, i] { runs[i] += 1; }));
  }
  // Queued a few ahead at a time and waited for in order, as the search does.
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::vector<std::shared_ptr<JobPool::Job>> ahead;
    for (size_t j = i + 1; j < std::min(jobs.size(), i + 5); ++j) ahead.push_back(jobs[j]);
    pool.queue(ahead);
    pool.wait(jobs[i]);
  }
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << "job " << i;
}

TEST(JobPool, WhatAJobThrowsReachesItsWaiter) {
  JobPool pool(0);  // every job runs in wait()
  auto job = std::make_shared<JobPool::Job>([] { throw std::runtime_error("job failed"); });
  pool.queue({job});
  EXPECT_THROW(pool.wait(job), std::runtime_error);
}

}  // namespace
}  // namespace tensorwire::testing
