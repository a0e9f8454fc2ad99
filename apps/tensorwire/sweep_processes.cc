#include "apps/tensorwire/sweep_processes.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "core/assert.h"

extern char** environ;

namespace tensorwire::app {
namespace {

Status system_error(const std::string& call, int error) {
  return Status(StatusCode::kInternal, call + " failed: " + std::strerror(error));
}

// Starts one process with its output in its log file.
Result<pid_t> spawn_point(const PointProcess& p) {
  TW_ASSERT(!p.argv.empty());
  posix_spawn_file_actions_t actions;
  if (int e = posix_spawn_file_actions_init(&actions); e != 0) {
    return system_error("posix_spawn_file_actions_init", e);
  }
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, p.log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& arg : p.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int e = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (e != 0) return system_error("posix_spawn of " + p.argv[0] + " (log " + p.log_path + ")", e);
  return pid;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 128;
}

}  // namespace

Status run_point_processes(const std::vector<PointProcess>& processes, size_t jobs,
                           const std::function<void(size_t, int)>& ended) {
  TW_ASSERT(jobs >= 1);
  std::map<pid_t, size_t> running;
  Status first_error;
  size_t next = 0;
  while (next < processes.size() || !running.empty()) {
    while (first_error.is_ok() && next < processes.size() && running.size() < jobs) {
      Result<pid_t> pid = spawn_point(processes[next]);
      if (!pid) {
        first_error = pid.status();
        break;
      }
      running.emplace(*pid, next++);
    }
    if (running.empty()) break;
    int wait_status = 0;
    const pid_t pid = waitpid(-1, &wait_status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      return system_error("waitpid", errno);
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;  // not one of ours
    const size_t index = it->second;
    running.erase(it);
    ended(index, exit_code_of(wait_status));
  }
  return first_error;
}

}  // namespace tensorwire::app
