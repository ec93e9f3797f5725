// Stop signals recorded by a watcher thread (sigwait), so that no compute thread is interrupted.
#include "common/train/stop_signal.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <mutex>
#include <thread>

namespace course::train {

namespace {

std::atomic<int> received{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler stores into it");

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGTERM);
  return set;
}

// For threads started before install_stop_handlers(), which may still take the signals.
void record(int signal) { received.store(signal); }

void watch() {
  const sigset_t set = stop_signals();
  for (;;) {
    int signal = 0;
    if (sigwait(&set, &signal) == 0) received.store(signal);
  }
}

void start_watcher() {
  struct sigaction action {};
  action.sa_handler = record;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGUSR1, SIGTERM}) {
    COURSE_CHECK(sigaction(signal, &action, nullptr) == 0, "cannot install the handler of signal ",
                 signal);
  }
  std::thread(watch).detach();
}

}  // namespace

void install_stop_handlers() {
  const sigset_t set = stop_signals();
  COURSE_CHECK(pthread_sigmask(SIG_BLOCK, &set, nullptr) == 0, "cannot block the stop signals");
  // OpenMP's pool may already run (the threads oneDNN's kernels use): block them there too.
#pragma omp parallel
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  static std::once_flag watcher;
  std::call_once(watcher, start_watcher);
  received.store(0);
}

int stop_signal() { return received.load(); }

void send_stop_signal(int signal) {
  COURSE_CHECK(kill(getpid(), signal) == 0, "cannot send signal ", signal);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (received.load() != signal) {
    COURSE_CHECK(std::chrono::steady_clock::now() < deadline, "signal ", signal,
                 " was not recorded within 10 s");
    std::this_thread::yield();
  }
}

void stop_training(int signal, int64_t step, const std::string& checkpoint) {
  const std::string name = signal == SIGUSR1 ? "SIGUSR1" : signal == SIGTERM ? "SIGTERM" : "signal";
  if (checkpoint.empty()) {
    throw PreemptedError(name + " after step " + std::to_string(step) +
                         "; no --chkpt was given, so this run's progress is lost");
  }
  throw PreemptedError(name + " after step " + std::to_string(step) + ": checkpoint written to " +
                       checkpoint + "; continue with --resume " + checkpoint);
}

}  // namespace course::train
