// The grader's shell commands and files (system.h).
#include "tools/grade/system.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "common/core/error.h"

namespace course::grade {

namespace {

// A run's output as it comes: the first half of `kept` bytes as they are, then the latest half
// (a ring), counting what fell out between.
class BoundedOutput {
 public:
  explicit BoundedOutput(size_t kept) : head_limit_(kept / 2), tail_limit_(kept - kept / 2) {}
  void append(const char* bytes, size_t n) {
    const size_t to_head = std::min(n, head_limit_ - head_.size());
    head_.append(bytes, to_head);
    tail_.append(bytes + to_head, n - to_head);
    if (tail_.size() > 2 * tail_limit_) drop_from_tail(tail_.size() - tail_limit_);
  }
  // Moves the output into `run`.
  void finish(TimedRun& run) {
    if (tail_.size() > tail_limit_) drop_from_tail(tail_.size() - tail_limit_);
    run.bytes_cut = cut_;
    run.output = std::move(head_);
    if (cut_ > 0) {
      run.output += "\n[... " + std::to_string(cut_) + " bytes of output cut: the grader keeps " +
                    std::to_string(head_limit_ + tail_limit_) + ", its start and its end ...]\n";
    }
    run.output += tail_;
  }

 private:
  void drop_from_tail(size_t n) {
    tail_.erase(0, n);
    cut_ += n;
  }
  size_t head_limit_, tail_limit_, cut_ = 0;
  std::string head_, tail_;
};

// The stop on a signal: the groups of the commands running, and what else stopping does.
struct Stopping {
  std::mutex mutex;
  std::set<pid_t> running_groups;
  std::function<void()> action;
  bool stopped = false;
};
Stopping& stopping() {
  static Stopping s;
  return s;
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  return set;
}

[[noreturn]] void wait_for_a_stop() {
  const sigset_t set = stop_signals();
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  std::function<void()> action;
  {
    std::lock_guard lock(stopping().mutex);
    stopping().stopped = true;
    for (const pid_t group : stopping().running_groups) kill(-group, SIGKILL);
    action = stopping().action;
  }
  std::cerr << "grading stopped by " << strsignal(sig) << "\n" << std::flush;
  if (action) action();
  std::_Exit(128 + sig);
}

// A thread that would go on once grading has stopped waits instead for the process to end, so
// that nothing writes in the work folder while it is removed.
[[noreturn]] void wait_for_the_end() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

// The child's group counted among the running ones (killed at once when grading has stopped).
void track(pid_t group) {
  std::unique_lock lock(stopping().mutex);
  if (stopping().stopped) {
    kill(-group, SIGKILL);
    lock.unlock();
    wait_for_the_end();
  }
  stopping().running_groups.insert(group);
}

void untrack(pid_t group) {
  std::unique_lock lock(stopping().mutex);
  stopping().running_groups.erase(group);
  if (!stopping().stopped) return;
  lock.unlock();
  wait_for_the_end();  // its command was killed by the stop, not by its limit
}

}  // namespace

void stop_cleanly_on_signals() {
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(wait_for_a_stop).detach();
}

WhenStopped::WhenStopped(std::function<void()> action) {
  std::lock_guard lock(stopping().mutex);
  stopping().action = std::move(action);
}

WhenStopped::~WhenStopped() {
  std::lock_guard lock(stopping().mutex);
  stopping().action = {};
}

TimedRun run_with_limit(const std::string& shell_command, double seconds,
                        size_t kept_output_bytes) {
  int pipe_fds[2];
  COURSE_CHECK(pipe(pipe_fds) == 0, "cannot make a pipe for ", shell_command);
  const pid_t child = fork();
  COURSE_CHECK(child >= 0, "cannot start ", shell_command);
  if (child == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // the grader's stop signals, blocked there
    setpgid(0, 0);
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    execl("/bin/sh", "sh", "-c", shell_command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(child, child);
  track(child);
  close(pipe_fds[1]);
  fcntl(pipe_fds[0], F_SETFL, fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
  TimedRun run;
  BoundedOutput output(kept_output_bytes);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  bool exited = false;
  char buffer[4096];
  for (;;) {
    ssize_t n;
    while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0)
      output.append(buffer, static_cast<size_t>(n));
    if (!exited && waitpid(child, &status, WNOHANG) == child) exited = true;
    if (exited && n == 0) break;  // exited and the pipe drained (every writer gone)
    if (exited && n < 0) {
      // Exited, but something it started may still hold the pipe: give it the same limit.
      if (std::chrono::steady_clock::now() > deadline) break;
    }
    if (!exited && std::chrono::steady_clock::now() > deadline) {
      run.timed_out = true;
      kill(-child, SIGKILL);
      waitpid(child, &status, 0);
      exited = true;
      while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0)
        output.append(buffer, static_cast<size_t>(n));
      break;
    }
    pollfd readable{pipe_fds[0], POLLIN, 0};
    poll(&readable, 1, 20);  // woken by more output at once, else after 20 ms
  }
  kill(-child, SIGKILL);  // whatever of its group is left
  untrack(child);
  close(pipe_fds[0]);
  output.finish(run);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

std::string first_line(const std::string& output) { return output.substr(0, output.find('\n')); }

std::string shell_quoted(const std::string& word) {
  std::string q = "'";
  for (const char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  COURSE_CHECK(in, "cannot read ", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  COURSE_CHECK(out << text, "cannot write ", path.string());
}

}  // namespace course::grade
